"""The segmenter keeps what was said: no split inside dotted names, versions, numbers, URLs,
file names or abbreviations; CJK terminators end sentences; a header keeps its list."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.capture.segment import sentences
from bridge.capture.extract import classify
from bridge.vocabulary import Kind


@pytest.mark.parametrize("whole", [
    "I prefer the Next.js App Router in every project.",
    "We decided to use PostgreSQL 16 and Next.js 14 for the billing service.",
    "Node.js 20.11.1 and Python 3.12 run the workers.",
    "The fix ships in v3.2.0-rc.1 tomorrow.",
    "Latency dropped to 3.5 ms after the change.",
    "See https://example.com/docs/v2.1/index.html?lang=en.",
    "Edit setup.py and pyproject.toml first.",
    "Use a managed store, e.g. Postgres or MySQL, i.e. nothing self-hosted.",
    "Dr. Chen approved the U.S. rollout.",
    "J. R. Smith owns the repo.",
    "Wait... we really chose Vue?!",
    "项目决定用 Next.js App Router。",
    "技术选型：Next.js 14、PostgreSQL 16；部署在 k8s 上。",
])
def test_a_sentence_with_dots_inside_stays_whole(whole: str) -> None:
    assert list(sentences(whole)) == [whole]


def test_sentences_are_split_at_real_ends_in_both_scripts() -> None:
    text = "We use Next.js. 我们决定用 Go！真的吗？Yes! Done.然后上线。"
    assert list(sentences(text)) == ["We use Next.js.", "我们决定用 Go！", "真的吗？", "Yes!", "Done.", "然后上线。"]


def test_a_header_keeps_its_list_and_other_lines_are_their_own_sentences() -> None:
    text = "技术选型：\n- Next.js 14\n- PostgreSQL 16\nwukong 的任务：实现登录接口\n\nDecisions:\n1. use Redis 7.2\n2. drop MongoDB"
    assert list(sentences(text)) == [
        "技术选型：\n- Next.js 14\n- PostgreSQL 16", "wukong 的任务：实现登录接口", "Decisions:\n1. use Redis 7.2\n2. drop MongoDB",
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?。！？\n:：-1e.gU.S\"")), max_size=80))
def test_segmentation_loses_no_character(text: str) -> None:
    """Every non-space character is in exactly one sentence, in order."""
    assert "".join("".join(s.split()) for s in sentences(text)) == "".join(text.split())


@pytest.mark.parametrize(("text", "kind"), [
    ("项目决定用 Next.js App Router", Kind.DECISION),
    ("技术选型：Next.js App Router", Kind.DECISION),
    ("架构决策：采用微前端", Kind.DECISION),
    ("wukong 的任务：实现登录接口", Kind.FACT),
    ("项目上下文：hawk-bridge 是记忆服务", Kind.FACT),
    ("部门规范：所有接口必须有鉴权", Kind.STANDARD),
    ("我更喜欢先写测试", Kind.PREFERENCE),
    ("踩坑：pgvector 需要先建扩展", Kind.EXPERIENCE),
    ("We're going with Next.js 14 for the dashboard", Kind.DECISION),
    ("bajie's task: write the billing tests", Kind.FACT),
    ("The coding standard is black with line length 100", Kind.STANDARD),
    ("It turns out the cache key was missing the tenant", Kind.EXPERIENCE),
    ("the weather is nice", None),
])
def test_chinese_and_english_rules_give_the_same_kinds(text: str, kind: Kind | None) -> None:
    assert classify(text) is kind
