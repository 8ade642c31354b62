"""A labelled bilingual capture set, and how the rule extractor does on it.

Utterances come from templates per kind (English and Chinese), filled with dotted names,
versions, numbers, URLs, file names and abbreviations, and combined into multi-sentence
messages, mixed-script messages and header+list blocks. Each label is the kind its template was
written for (and None for chatter, which must not be captured); the expected scope is seed 003's
placement of that kind. Reported: kind accuracy, scope accuracy, and truncations — a captured
memory whose content is a strict part of an utterance (goal: 0).

The templates were written together with `bridge/capture/rules.py`, so the accuracies are an
in-sample measure (they say the rules cover what the set says, not how they do on unseen
speech); the truncation count holds for any text, since it tests the segmenter.

    python -m benchmarks.capture_set          # prints the report (JSON)
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

from adapters.scopes import Visibility
from bridge.capture.extract import RuleExtractor
from bridge.results import Message
from bridge.policy import Policy
from bridge.vocabulary import Kind

__all__ = ["Utterance", "utterances", "messages", "report"]

THINGS = [
    "Next.js 14", "Node.js 20.11.1", "PostgreSQL 16", "Python 3.12", "Vue.js 3.4", "Redis 7.2", "setup.py",
    "https://example.com/v2.1/api", "the U.S. region", "pgvector 0.7.0", "k8s 1.29", "FastAPI 0.110",
]
ZH_THINGS = ["Next.js App Router", "Node.js 20.11.1", "PostgreSQL 16", "Redis 7.2", "微前端", "setup.py", "v3.2.1 版本"]

TEMPLATES: dict[Kind | None, list[str]] = {
    Kind.DECISION: [
        "We decided to use {x} for the billing service.", "We're going with {x}, e.g. for the dashboard.",
        "Decision: {x} replaces the old stack.", "We chose {x} after Dr. Lee's review.", "We'll use {x} in production.",
        "项目决定用 {z}。", "技术选型：{z}。", "架构决策：采用 {z}。", "我们决定使用 {z} 做缓存。", "团队决定改用 {z}。",
    ],
    Kind.PREFERENCE: [
        "I prefer {x} in every project.", "I really like {x} for side projects.", "Please always answer with {x} examples.",
        "I'd rather not use {x} here.", "我更喜欢 {z}。", "我习惯用 {z} 写代码。", "请总是用 {z} 举例。",
    ],
    Kind.STANDARD: [
        "The coding standard is {x} for every service.", "All services must pin {x}.",
        "部门规范：所有服务必须使用 {z}。", "编码规范要求统一使用 {z}。",
    ],
    Kind.FACT: [
        "Remember that the API runs on {x}.", "Note that staging is deployed on {x}.", "bajie's task: upgrade {x}.",
        "The project uses {x} for search.", "wukong 的任务：迁移到 {z}。", "项目上下文：后端基于 {z}。", "注意：数据库是 {z}。",
    ],
    Kind.EXPERIENCE: [
        "It turns out {x} needs a warm cache.", "Lesson learned: {x} breaks without the flag.",
        "踩坑：{z} 需要先建扩展。", "根因是 {z} 的配置错误。",
    ],
    Kind.PROFILE: ["My name is Ada and I work on {x}.", "我是后端工程师，负责 {z}。"],
    None: ["Thanks, that looks fine with {x}.", "Can you check {x} again?", "好的，{z} 看起来没问题。", "今天天气不错，{z} 也在跑。"],
}

SCOPE_OF: dict[Kind, Visibility] = {k: Policy().default_visibility(k) for k in Kind}


@dataclass(frozen=True)
class Utterance:
    text: str
    kind: Kind | None


def utterances() -> list[Utterance]:
    out = []
    for kind, templates in TEMPLATES.items():
        for template in templates:
            for x, z in zip(THINGS, itertools.cycle(ZH_THINGS)):
                out.append(Utterance(template.format(x=x, z=z), kind))
    return sorted(set(out), key=lambda u: u.text)


def messages(items: list[Utterance]) -> list[tuple[str, list[Utterance]]]:
    """Messages built from the utterances: one each, pairs in one message (mixed scripts as they
    come), and header + list blocks (kept together as one memory, labelled by their header)."""
    out = [(u.text, [u]) for u in items]
    for a, b in zip(items[::2], items[1::2]):
        out.append((f"{a.text} {b.text}", [a, b]))
    for x, y in zip(THINGS[::2], THINGS[1::2]):
        block = f"技术选型：\n- {x}\n- {y}"
        out.append((block, [Utterance(block, Kind.DECISION)]))
        block = f"Decisions:\n1. we decided to use {x}\n2. we chose {y}"
        out.append((block, [Utterance(block, Kind.DECISION)]))
    return out


def report() -> dict[str, object]:
    extractor = RuleExtractor()
    labelled = kind_ok = scope_ok = truncations = spurious = missed = 0
    for text, parts in messages(utterances()):
        got = {c.content: c.kind for c in extractor.extract([Message(role="user", content=text)])}
        for content in got:
            if any(content != u.text and content in u.text for u in parts):
                truncations += 1
        for u in parts:
            kind = got.get(u.text)
            if u.kind is None:
                spurious += kind is not None
                continue
            labelled += 1
            missed += kind is None
            kind_ok += kind is u.kind
            scope_ok += kind is not None and SCOPE_OF[kind] is SCOPE_OF[u.kind]
    return {
        "utterances": len(utterances()), "labelled_memories": labelled,
        "kind_accuracy": round(kind_ok / labelled, 4), "scope_accuracy": round(scope_ok / labelled, 4),
        "missed": missed, "chatter_captured": spurious, "truncations": truncations,
    }


if __name__ == "__main__":
    print(json.dumps(report(), indent=2, ensure_ascii=False))
