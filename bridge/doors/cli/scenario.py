"""The phase-7 scenario of seed 002: a procurement Kafka-idempotency task, as data and stubs.

Shared by `viking-bridge demo multi-agent` (demo.py) and examples/phase7_http.py, so the two
runs use the same memories. The agents are deterministic stubs (no model): each reads only the
manifest it was given and answers from it. Never authorises anything; it only describes.

Where memories live: the coordinator's own agent scope holds the federated memory (ontology
nodes BIZ-*/ARCH-*, each with `domain`/`tier` metadata) that children only get by injection;
the project workspace holds team context; write-backs land in the workspace (decision kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

__all__ = ["TASK", "DAG", "SEED_COUNTS", "Node", "NODES", "NOISE", "PRIVATE_NOTE", "TEAM_NOTE", "Outcome", "intent_stub", "ontology_stub", "verifier_stub", "coder_stub"]

TASK = "采购订单 Kafka 消费幂等：供应商合同到期阈值校验 (procurement threshold scenario)"
DAG = ("intent", "ontology", "simulation-verifier", "coder")
#: What seed 002 reports for this task: injected memories per role.
SEED_COUNTS = {"intent": 3, "ontology": 8, "simulation-verifier": 3}


@dataclass(frozen=True)
class Node:
    node: str  # the ontology node id (seed 002's BIZ-CN-001 ...), kept in metadata
    content: str
    kind: str
    domain: str
    tier: str
    visibility: str = "agent"  # the coordinator's agent scope: children get it only by injection

    def metadata(self) -> dict[str, str]:
        return {"node": self.node, "domain": self.domain, "tier": self.tier}


NODES: tuple[Node, ...] = (
    # purchasing, hot: the constraints the verifier checks
    Node("BIZ-CN-001", "采购规则：供应商合同剩余有效期低于阈值 15 天时，采购订单必须阻断 (enforcement=reject, threshold may not be lowered)", "decision", "purchasing", "hot"),
    Node("BIZ-CN-002", "采购订单金额超过 100 万需要 VP 审批 (procurement approval rule)", "decision", "purchasing", "hot"),
    Node("BIZ-CN-003", "Beta 供应商合同剩余 13 天（2026-12-14 到期），阈值校验会触发", "fact", "purchasing", "hot"),
    # purchasing, warm
    Node("BIZ-CN-004", "供应商 Alpha 合同有效至 2027-06，采购阈值校验通过", "fact", "purchasing", "warm"),
    Node("BIZ-CN-005", "采购订单状态机：draft -> approved -> ordered；阈值阻断停在 approved", "decision", "purchasing", "warm"),
    Node("BIZ-CN-006", "采购订单重试流程：阈值阻断后由采购员人工确认再重新提交", "procedure", "purchasing", "warm"),
    # purchasing, cold: read by no role of phase 7 (tiers hot/warm)
    Node("BIZ-CN-090", "2024 年旧版采购流程：阈值 7 天（已废止）", "fact", "purchasing", "cold"),
    # code-arch
    Node("ARCH-001", "订单事件走 Kafka topic procurement.orders，consumer 按 order_id 幂等消费", "decision", "code-arch", "hot"),
    Node("ARCH-002", "幂等键 = order_id + version，写入 Redis SETNX 保留 24 小时 (Kafka consumer idempotency)", "procedure", "code-arch", "hot"),
    Node("ARCH-003", "Kafka 至少一次投递：consumer 必须容忍重复消息，幂等校验在业务写入之前", "fact", "code-arch", "warm"),
    Node("ARCH-004", "本体变更通过 OntologyRegistry.validate() 校验后才能写入 (schema)", "decision", "code-arch", "warm"),
    Node("ARCH-005", "Kafka consumer group procurement-ontology 手动提交 offset，处理成功后提交", "procedure", "code-arch", "warm"),
    Node("ARCH-090", "旧版 RabbitMQ 队列方案已废弃，不再用于采购服务", "fact", "code-arch", "cold"),
    # team (workspace) project context: read by everyone, listed at depth standard
    Node("PROJ-001", "项目决定：采购服务的 Kafka 消息用 outbox 模式发送，保证幂等 (project decision)", "decision", "code-arch", "hot", visibility="workspace"),
)
#: Memories that must reach no manifest of this task: another workspace's, a domain-less one.
NOISE = (
    ("logistics", "物流项目：采购订单 Kafka topic 改为 logistics.orders，阈值 30 天", "decision", {"domain": "purchasing", "tier": "hot"}),
)
#: Team memory of team "procurement" (members: the role file's agents), no domain: read by members only.
TEAM_NOTE = "团队约定 (team procurement)：阈值类变更先经模拟验证智能体通过，再触发代码生成"
#: The coordinator's private reasoning: no domain, never routed, never injected.
PRIVATE_NOTE = "协调器内部推理：本体智能体上次在阈值问题上重试了两次，先给它否决记录"


@dataclass(frozen=True)
class Outcome:
    content: str
    passed: bool | None = None  # the verifier's verdict; None for other agents


def _nodes(memories: Sequence[Mapping[str, object]]) -> set[str]:
    return {str((m.get("metadata") or {}).get("node", "")) for m in memories}


def intent_stub(memories: Sequence[Mapping[str, object]]) -> Outcome:
    rules = sorted(n for n in _nodes(memories) if n.startswith("BIZ"))
    return Outcome(f"意图 (intent)：调整供应商到期阈值校验并保持 Kafka 消费幂等；约束 {rules}")


def ontology_stub(memories: Sequence[Mapping[str, object]], veto: str | None) -> Outcome:
    if veto is None:
        return Outcome("本体提案 v1 (ontology)：lower_threshold_to_10_days —— 把 BIZ-CN-001 的阈值从 15 天降到 10 天")
    return Outcome("本体提案 v2 (ontology)：keep_threshold_add_warning —— 保留 15 天阈值，剩余 < 15 天时阻断并提前告警")


def verifier_stub(memories: Sequence[Mapping[str, object]], proposal: str) -> Outcome:
    nodes = _nodes(memories)
    if "lower_threshold" in proposal and "BIZ-CN-001" in nodes and "BIZ-CN-003" in nodes:
        return Outcome("否决 (veto) v1：Beta 供应商剩余 13 天 < 阈值 15 天；BIZ-CN-001 enforcement=reject 不允许降低阈值", passed=False)
    if "keep_threshold" in proposal:
        return Outcome("通过 (pass) v2：阈值保持 15 天，Beta 供应商 13 天被阻断并告警，约束全部满足", passed=True)
    return Outcome("否决 (veto)：提案缺少约束依据", passed=False)


def coder_stub(memories: Sequence[Mapping[str, object]]) -> Outcome:
    arch = sorted(n for n in _nodes(memories) if n.startswith(("ARCH", "PROJ")))
    return Outcome(f"代码生成 (code generation)：ThresholdCheckConsumer（幂等键 order_id+version，告警阈值 15 天）；依据 {arch}")
