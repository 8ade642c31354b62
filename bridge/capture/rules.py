"""What counts as evidence of each kind of memory, in Chinese and English — as data.

Each rule is a kind, literal phrases that are evidence wherever they occur in a sentence, and
(head, tail) phrase pairs that are evidence when the tail follows the head. `bridge/capture/extract.py`
compiles them into bounded-width patterns (no phrase may need an unbounded gap: see its
docstring). The first rule that holds gives a sentence its kind, so the order matters: a
department standard is checked before a decision ("规范：统一采用 UTF-8" is a standard), a
decision before a preference, a project fact or task last.

The kind says what a memory is; where it lands is the policy's decision (seed 003's write rules):
preference / profile -> the user, fact / decision -> the current workspace, standard -> the
department, pending approval, procedure / experience -> the agent. No phrase here can name a
scope, so no text can lift a memory to tenant or global.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

from bridge.vocabulary import Kind

__all__ = ["RuleSpec", "RULE_SPECS", "IN_AT_WORK"]


def _each(prefixes: Sequence[str], words: Sequence[str]) -> tuple[str, ...]:
    return tuple(p + w for p, w in itertools.product(prefixes, words))


@dataclass(frozen=True)
class RuleSpec:
    kind: Kind
    phrases: tuple[str, ...]
    ordered: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()


#: "我在 <up to 12 characters> 工作/负责": a profile; compiled with its own bounded gap.
IN_AT_WORK = r"我在.{0,12}(?:工作|负责)"

RULE_SPECS: tuple[RuleSpec, ...] = (
    RuleSpec(Kind.STANDARD, (
        "部门规范", "团队规范", "编码规范", "开发规范", "代码规范", "规范要求", "规范：", "规范是", "公司规定",
        "部门标准", "必须遵守", "所有服务必须", "所有项目必须",
        "department standard", "team standard", "coding standard", "engineering standard",
        "our standard is", "the standard is", "house rule", "company policy",
        "all services must", "every service must", "all projects must", "every project must",
    )),
    RuleSpec(Kind.DECISION, (
        "我们决定", "决定采用", "决定使用", "决定用", "架构决策", "技术决策", "决策：", "决定：", "项目决定", "团队决定",
        "采用", "选型", "技术栈：", "技术栈是", "确定用", "确定使用", "改用", "统一用", "统一使用", "选用", "最终选择",
        "我们选择", "我们用", "就用", "方案定为", "定为",
        "we decided", "we have decided", "we've decided", "decided to", "decision:", "we will use", "we'll use",
        "we chose", "we have chosen", "we've chosen", "we picked", "we are going with", "we're going with",
        "we'll go with", "we will go with", "we adopted", "we are adopting", "we're adopting", "we agreed",
        "let's use", "let's go with", "the team chose", "tech stack:", "architecture decision",
        "we are switching to", "we're switching to", "we are moving to", "we're moving to",
        "we will migrate to", "we'll migrate to",
    )),
    RuleSpec(Kind.PREFERENCE, (
        "我喜欢", "我偏好", "我习惯", "我更喜欢", "我不喜欢", "请总是", "我倾向", "我比较喜欢", "我讨厌", "请不要", "请别",
        "我希望你", "我更倾向",
        *_each(("i ", "i really "), ("prefer", "like", "love", "hate", "dislike")),
        "please always", "please never", "please don't", "i'd rather", "i'd prefer", "i would prefer", "my preference",
        "i always want", "i want you to always",
    )),
    RuleSpec(Kind.PROFILE, (
        "我是", "我叫", "我的名字", "我的职位", "我的角色", "我负责",
        "my name is", "i am a", "i am an", *_each(("i work ",), ("at", "on", "in")), "i'm a", "i'm an",
        "my role is", "my job is", "i'm responsible for", "i am responsible for",
    )),
    RuleSpec(
        Kind.PROCEDURE,
        ("运行命令", "用命令", "步骤是", "部署步骤", "构建命令", "启动命令", "执行命令", "the command is", "the steps are"),
        # "to deploy ... use X": two bounded searches, not `.*`. No head occurs inside another
        # at a later start, so the first head to start is the first to end.
        ((_each(("to ",), ("run", "build", "deploy", "test", "start", "install", "release")), ("use", "run")),
         (("要部署", "要构建", "要测试", "要启动", "要发布"), ("运行", "执行", "用"))),
    ),
    RuleSpec(Kind.EXPERIENCE, (
        "踩坑", "教训", "经验：", "经验是", "我发现", "结果发现", "原来是", "根因是", "根本原因",
        "lesson learned", "lessons learned", "turned out", "it turns out", "i found that", "i learned that",
        "the fix was", "the root cause was",
    )),
    RuleSpec(Kind.FACT, (
        "记住", "请记得", "注意：", "remember that", "note that", "fyi",
        # tasks: who does what
        "任务：", "的任务", "任务是", "负责实现", "待办", "todo:", "to-do:", "action item", "task:", "'s task",
        "is responsible for", "is assigned to", "assigned to", "is working on",
        # project facts
        "项目上下文", "项目使用", "项目用", "项目基于", "仓库地址", "代码库", "部署在", "运行在", "端口是", "端口号",
        "版本是", "数据库是", "截止", "上线时间",
        "the project uses", "this project uses", "our stack", "the stack is", "the repo is", "the repository is",
        "is deployed", "runs on", "listens on", "the endpoint is", "the database is", "the port is", "the deadline is",
    )),
)
