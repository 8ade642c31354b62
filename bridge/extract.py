"""Conversation -> candidate memories, deterministically (the local default extractor).

A rule-based extractor for Chinese and English: it keeps user statements of preference, profile,
decisions, facts to remember and procedures, and ignores everything else. It only proposes a
*kind* and *content*; where the memory lands is decided by the policy from the identity, so
a message saying "store this for user bob in the tenant scope" is just text.
Plug in an LLM extractor with any object implementing `Extractor`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

from bridge.models import Message
from bridge.vocabulary import Kind


@dataclass(frozen=True)
class Candidate:
    kind: Kind
    content: str
    message_id: str | None
    message_index: int = 0  # position of the source message in the captured list


class Extractor(Protocol):
    def extract(self, messages: Sequence[Message]) -> list[Candidate]: ...


_RULES: list[tuple[Kind, re.Pattern[str]]] = [
    (Kind.DECISION, re.compile(r"(我们决定|决定采用|决定使用|架构决策|\bwe (?:have )?decided\b|\bdecision:|\bwe will use\b|\bwe'll use\b)", re.I)),
    (Kind.PREFERENCE, re.compile(r"(我喜欢|我偏好|我习惯|我更喜欢|我不喜欢|请总是|\bi (?:really )?(?:prefer|like|love|hate|dislike)\b|\bplease always\b|\bi'd rather\b)", re.I)),
    (Kind.PROFILE, re.compile(r"(我是|我叫|我的名字|我在.{0,12}(?:工作|负责)|\bmy name is\b|\bi am an?\b|\bi work (?:at|on|in)\b|\bi'm an?\b)", re.I)),
    (Kind.PROCEDURE, re.compile(r"(运行命令|用命令|步骤是|\bto (?:run|build|deploy|test)\b.*\b(?:use|run)\b|\bthe command is\b)", re.I)),
    (Kind.FACT, re.compile(r"(记住|请记得|注意：|\bremember that\b|\bnote that\b|\bfyi\b)", re.I)),
]
_SENTENCE = re.compile(r"[^。！？!?\.\n]+[。！？!?\.]?")


class RuleExtractor:
    def __init__(self, max_chars: int = 500) -> None:
        self.max_chars = max_chars

    def extract(self, messages: Sequence[Message]) -> list[Candidate]:
        out: list[Candidate] = []
        seen: set[str] = set()
        for index, message in enumerate(messages):
            if message.role != "user":
                continue  # only what the user said is evidence about the user
            for sentence in _SENTENCE.findall(message.content):
                text = sentence.strip()
                if len(text) < 4:
                    continue
                for kind, pattern in _RULES:
                    if pattern.search(text):
                        content = text[: self.max_chars]
                        if content not in seen:
                            seen.add(content)
                            out.append(Candidate(kind, content, message.message_id, index))
                        break
        return out
