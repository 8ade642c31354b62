"""Retrieval quality on a bilingual multi-user conversation set: hit@5 / hit@10 per embedder.

Dataset: benchmarks/data/recall_quality/ (Chinese and English multi-session conversations of
twelve users, questions with labelled evidence turns; see its README). Every user's turns are
stored as that user's PRIVATE memories in one tenant, so each question searches only the asking
user's memories — and any hit from another user is a leak: the run exits 1 on the first one.

For each embedder it measures
- `raw`: exact nearest neighbours with that embedder over the asking user's turns (numpy, no
  bridge): the quality the vectors alone give;
- `pipeline`: `MemoryBridge.recall` over a `LocalBackend` built with the same embedder, memories
  written through `remember` (policy, write path, audit), recalled through scopes -> search ->
  guard -> rank -> budget -> label -> render: the pipeline must not cost quality.
A question is a hit@k when any of its evidence turns is among the first k results. Also
measured without the bridge: reciprocal rank fusion (k=60) of the hashing and semantic rankings,
and the hybrid at other lexical weights — the alternatives the default was chosen against.

    .venv/bin/python benchmarks/recall_quality.py                 # everything (~1 min)
    .venv/bin/python benchmarks/recall_quality.py --users 2       # the first 2 users per language
    .venv/bin/python benchmarks/recall_quality.py --out bench-results/recall_quality.json

Measures library code only; never imported by the library.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.shared.embedding import Embedder, HashingEmbedder, HybridEmbedder, UniversalSentenceEncoder, semantic_encoder_available  # noqa: E402
from adapters.local import LocalBackend  # noqa: E402
from adapters.scopes import ScopeKey  # noqa: E402
from bridge.facade import MemoryBridge  # noqa: E402
from identity.model import MemoryIdentity  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "recall_quality"
TENANT = "bench"
KS = (1, 5, 10)
RRF_K = 60


@dataclasses.dataclass(frozen=True)
class Turn:
    user: str
    turn: str
    text: str


@dataclasses.dataclass(frozen=True)
class Question:
    user: str
    id: str
    text: str
    evidence: frozenset[str]


@dataclasses.dataclass
class Dataset:
    turns: dict[str, list[Turn]]  # user -> their turns, in conversation order
    questions: list[Question]
    lang: dict[str, str]  # user -> "en" | "zh"


class CrossUserHit(Exception):
    """A result from another user's memories: the run fails."""


def load(users_per_lang: int | None = None, data: Path = DATA) -> Dataset:
    turns: dict[str, list[Turn]] = {}
    questions: list[Question] = []
    lang: dict[str, str] = {}
    for code in ("en", "zh"):
        chosen: list[str] = []
        for line in (data / f"conversations_{code}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["user"] not in lang:
                if users_per_lang is not None and len(chosen) >= users_per_lang:
                    continue
                chosen.append(row["user"])
                lang[row["user"]] = code
            if row["user"] in chosen:
                turns.setdefault(row["user"], []).append(Turn(row["user"], row["turn"], row["text"]))
        for line in (data / f"questions_{code}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["user"] in chosen:
                questions.append(Question(row["user"], row["id"], row["question"], frozenset(row["evidence"])))
    return Dataset(turns, questions, lang)


def hits_at(ranked: list[str], evidence: frozenset[str]) -> dict[int, bool]:
    return {k: any(t in evidence for t in ranked[:k]) for k in KS}


def _score(results: list[tuple[Question, list[str]]], ds: Dataset) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code in ("all", "en", "zh"):
        rows = [(q, r) for q, r in results if code == "all" or ds.lang[q.user] == code]
        if not rows:
            continue
        flags = [hits_at(r, q.evidence) for q, r in rows]
        out[code] = {f"hit@{k}": round(sum(f[k] for f in flags) / len(flags), 4) for k in KS} | {"questions": len(rows)}
    return out


# -- raw nearest neighbours ---------------------------------------------------------------------

async def raw_rankings(ds: Dataset, embedder: Embedder) -> dict[str, list[str]]:
    """question id -> turn ids by cosine, over the asking user's turns only."""
    ranked: dict[str, list[str]] = {}
    for user, turns in ds.turns.items():
        matrix = await embedder.embed([t.text for t in turns])
        mine = [q for q in ds.questions if q.user == user]
        queries = await embedder.embed([q.text for q in mine])
        for q, vec in zip(mine, queries):
            order = np.argsort(-(matrix @ vec), kind="stable")
            ranked[q.id] = [turns[i].turn for i in order[: max(KS)]]
    return ranked


def rrf(*rankings: dict[str, list[str]], k: int = RRF_K) -> dict[str, list[str]]:
    fused: dict[str, list[str]] = {}
    for qid in rankings[0]:
        score: dict[str, float] = {}
        for ranking in rankings:
            for rank, turn in enumerate(ranking[qid]):
                score[turn] = score.get(turn, 0.0) + 1.0 / (k + rank + 1)
        fused[qid] = sorted(score, key=lambda t: -score[t])[: max(KS)]
    return fused


def check_own(ds: Dataset, ranking: dict[str, list[str]], where: str) -> None:
    owner = {t.turn: t.user for turns in ds.turns.values() for t in turns}
    for q in ds.questions:
        for turn in ranking[q.id]:
            if owner.get(turn) != q.user:
                raise CrossUserHit(f"{where}: question {q.id} of {q.user} got turn {turn} of {owner.get(turn)!r}")


# -- the full bridge pipeline ------------------------------------------------------------------

def identity(user: str) -> MemoryIdentity:
    return MemoryIdentity(tenant_id=TENANT, user_id=user, agent_id="assistant", session_id=f"s-{user}")


async def pipeline_rankings(ds: Dataset, embedder: Embedder, home: Path) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Write every turn through `remember`, recall every question through `MemoryBridge.recall`.
    Raises CrossUserHit when an item is not one of the asking user's own memories."""
    backend = LocalBackend(home / "store", embedder=embedder)
    bridge = MemoryBridge.with_backend(backend, home)
    turn_of: dict[str, tuple[str, str]] = {}  # memory id -> (user, turn id)
    ranked: dict[str, list[str]] = {}
    try:
        started = time.perf_counter()
        for user, turns in ds.turns.items():
            who = identity(user)
            for t in turns:
                written = await bridge.remember(who, t.text, "event", idempotency_key=t.turn)
                turn_of[written.memory_id] = (user, t.turn)
        ingest_s = time.perf_counter() - started
        started = time.perf_counter()
        for q in ds.questions:
            result = await bridge.recall(identity(q.user), q.text, budget_tokens=20_000)
            own_scope = str(ScopeKey.private(TENANT, q.user))
            order = []
            for item in result.items:
                owner = turn_of.get(item.memory_id, ("<unknown>", ""))[0]
                if item.scope != own_scope or owner != q.user:
                    raise CrossUserHit(f"pipeline: question {q.id} of {q.user} got memory {item.memory_id} of {owner} in {item.scope}")
                order.append(turn_of[item.memory_id][1])
            ranked[q.id] = order[: max(KS)]
        recall_s = time.perf_counter() - started
    finally:
        await bridge.aclose()
    n_turns = sum(len(t) for t in ds.turns.values())
    return ranked, {"remember_ms_per_memory": round(1000 * ingest_s / n_turns, 2), "recall_ms_per_question": round(1000 * recall_s / len(ds.questions), 2)}


# -- the run ----------------------------------------------------------------------------------

def embedders(weights: tuple[float, ...] = (0.3, 0.5, 0.7)) -> dict[str, Callable[[], Embedder]]:
    from adapters.shared.embedding import DEFAULT_LEXICAL_WEIGHT

    made: dict[str, Callable[[], Embedder]] = {"hashing": lambda: HashingEmbedder(384)}
    if semantic_encoder_available():
        made["semantic"] = lambda: UniversalSentenceEncoder()
        for w in sorted(set(weights) | {DEFAULT_LEXICAL_WEIGHT}):
            name = "hybrid" if w == DEFAULT_LEXICAL_WEIGHT else f"hybrid-w{w:g}"
            made[name] = lambda w=w: HybridEmbedder([(HashingEmbedder(384), w), (UniversalSentenceEncoder(), round(1 - w, 6))])
    return made


async def embed_cost(embedder: Embedder, texts: list[str]) -> dict[str, float]:
    await embedder.embed(texts[:2])  # loads the model
    started = time.perf_counter()
    for t in texts[:50]:
        await embedder.embed([t])
    one = (time.perf_counter() - started) / min(50, len(texts))
    started = time.perf_counter()
    await embedder.embed(texts)
    batch = (time.perf_counter() - started) / len(texts)
    return {"query_ms": round(1000 * one, 3), "batch_ms_per_text": round(1000 * batch, 3), "bytes_per_vector": 4 * embedder.dimension}


async def run(users_per_lang: int | None = None, *, pipeline: tuple[str, ...] = ("hashing", "semantic", "hybrid"), weights: tuple[float, ...] = (0.3, 0.5, 0.7)) -> dict[str, Any]:
    """The whole measurement as a dict; raises CrossUserHit on any leak."""
    ds = load(users_per_lang)
    report: dict[str, Any] = {"users": len(ds.turns), "memories": sum(len(t) for t in ds.turns.values()), "questions": len(ds.questions),
                              "semantic_encoder": semantic_encoder_available(), "raw": {}, "pipeline": {}, "cost": {}}
    texts = [t.text for turns in ds.turns.values() for t in turns]
    raw: dict[str, dict[str, list[str]]] = {}
    for name, make in embedders(weights).items():
        embedder = make()
        raw[name] = await raw_rankings(ds, embedder)
        check_own(ds, raw[name], f"raw {name}")
        report["raw"][name] = _score([(q, raw[name][q.id]) for q in ds.questions], ds)
        report["cost"][name] = await embed_cost(embedder, texts)
        if name in pipeline:
            with tempfile.TemporaryDirectory(prefix="recall-quality-") as tmp:
                ranked, timing = await pipeline_rankings(ds, embedder, Path(tmp))
            report["pipeline"][name] = _score([(q, ranked[q.id]) for q in ds.questions], ds)
            report["cost"][name] |= timing
    if "hashing" in raw and "semantic" in raw:
        fused = rrf(raw["hashing"], raw["semantic"])
        report["raw"]["rrf(hashing,semantic)"] = _score([(q, fused[q.id]) for q in ds.questions], ds)
    return report


def table(report: dict[str, Any]) -> str:
    lines = [f"{report['users']} users, {report['memories']} memories, {report['questions']} questions (semantic encoder installed: {report['semantic_encoder']})", ""]
    lines.append(f"{'embedder':<24} {'path':<9} {'hit@1':>6} {'hit@5':>6} {'hit@10':>6} {'en@5':>6} {'en@10':>6} {'zh@5':>6} {'zh@10':>6}")
    for path in ("raw", "pipeline"):
        for name, s in report[path].items():
            cells = [s["all"][f"hit@{k}"] for k in KS] + [s.get(c, {}).get(f"hit@{k}", float("nan")) for c in ("en", "zh") for k in (5, 10)]
            lines.append(f"{name:<24} {path:<9} " + " ".join(f"{v:>6.3f}" for v in cells))
    lines += ["", f"{'embedder':<24} {'query ms':>9} {'batch ms/text':>14} {'bytes/vector':>13} {'remember ms':>12} {'recall ms':>10}"]
    for name, c in report["cost"].items():
        lines.append(f"{name:<24} {c['query_ms']:>9.2f} {c['batch_ms_per_text']:>14.3f} {c['bytes_per_vector']:>13} "
                     f"{c.get('remember_ms_per_memory', float('nan')):>12.2f} {c.get('recall_ms_per_question', float('nan')):>10.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=None, help="only the first N users of each language")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    args = parser.parse_args(argv)
    try:
        report = asyncio.run(run(args.users))
    except CrossUserHit as leak:
        print(f"CROSS-USER HIT: {leak}", file=sys.stderr)
        return 1
    print(table(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
