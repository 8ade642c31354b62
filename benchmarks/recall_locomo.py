"""Evidence retrieval on long multi-session conversations (LoCoMo-like): hit@5 / hit@10 per method.

Data: `benchmarks/locomo_data.py`, generated from a seed (default 2, the reported one; weights
were tuned on seed 1). Hundreds of memories per user across 25 sessions, English and Chinese
users, single-hop, multi-hop, temporal and update questions. Every user's turns are that user's
PRIVATE memories in ONE local store, so every other user's memories are decoys in the same
store; any result that is not the asking user's own memory is a leak and ends the run (exit 1).

Methods, for each embedder (hashing, semantic, hybrid = the default):
- `vector`: the local backend's vector channel alone (`search_vector`: exact nearest neighbours);
- `lexical`: the BM25 channel alone (`search_lexical`, adapters/local/lexical.py);
- `fused`: `LocalBackend.search` (both channels, reciprocal rank fusion, inside the backend);
- `pipeline`: `MemoryBridge.recall` on the default settings (policy ScopeSet, search, guard,
  rank incl. time-aware ranking, budget of 20,000 tokens, label), the bridge's clock at the day
  after the last session and every memory dated by its session.
A question is a hit@k when one of its evidence turns is among the first k results.

    .venv/bin/python benchmarks/recall_locomo.py                     # seed 2, 6 + 6 users (~2-4 min)
    .venv/bin/python benchmarks/recall_locomo.py --seed 1 --users 2  # the tuning seed, smaller
    .venv/bin/python benchmarks/recall_locomo.py --out bench-results/recall_locomo.json

Measures library code only; never imported by the library.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.base import NewMemory, Provenance, SearchQuery  # noqa: E402
from adapters.local import LocalBackend  # noqa: E402
from adapters.scopes import ScopeKey, ScopeSet  # noqa: E402
from adapters.shared.embedding import Embedder, HashingEmbedder, HybridEmbedder, UniversalSentenceEncoder, semantic_encoder_available  # noqa: E402
from benchmarks.locomo_data import Dataset, generate  # noqa: E402
from bridge.facade import MemoryBridge  # noqa: E402
from identity.model import MemoryIdentity  # noqa: E402

TENANT = "bench"
KS = (5, 10)
DEPTH = 10


class CrossUserHit(Exception):
    """A result that is not the asking user's own memory: the run fails."""


def embedders() -> dict[str, Callable[[], Embedder]]:
    from adapters.shared.embedding import DEFAULT_LEXICAL_WEIGHT

    made: dict[str, Callable[[], Embedder]] = {"hashing": lambda: HashingEmbedder(384)}
    if semantic_encoder_available():
        made["semantic"] = lambda: UniversalSentenceEncoder()
        w = DEFAULT_LEXICAL_WEIGHT
        made["hybrid"] = lambda: HybridEmbedder([(HashingEmbedder(384), w), (UniversalSentenceEncoder(), round(1 - w, 6))])
    return made


def score(ds: Dataset, ranked: dict[str, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    groups = {"all": ds.questions, "en": [q for q in ds.questions if ds.lang[q.user] == "en"], "zh": [q for q in ds.questions if ds.lang[q.user] == "zh"]}
    for cat in sorted({q.category for q in ds.questions}):
        groups[cat] = [q for q in ds.questions if q.category == cat]
    for name, qs in groups.items():
        out[name] = {f"hit@{k}": round(sum(any(t in q.evidence for t in ranked[q.id][:k]) for q in qs) / len(qs), 4) for k in KS} | {"questions": len(qs)}
    return out


def identity(user: str) -> MemoryIdentity:
    return MemoryIdentity(tenant_id=TENANT, user_id=user, agent_id="assistant", session_id=f"s-{user}")


async def measure(ds: Dataset, embedder: Embedder, home: Path, **bridge_options: Any) -> tuple[dict[str, dict[str, list[str]]], dict[str, float]]:
    """Rankings of every method (question id -> turn ids); raises CrossUserHit on any foreign result."""
    backend = LocalBackend(home / "store", embedder=embedder)
    turn_of: dict[str, tuple[str, str]] = {}  # memory id -> (user, turn id)
    started = time.perf_counter()
    for user, turns in ds.turns.items():
        scope = ScopeKey.private(TENANT, user)
        stored = await backend.put_many([(scope, NewMemory(t.text, "event", Provenance(user, "assistant", f"s-{user}"), created_at=t.at), t.turn) for t in turns])
        turn_of.update((s.id, (user, t.turn)) for s, t in zip(stored, turns))
    ingest_s = time.perf_counter() - started
    rowid_to_id = dict(backend._db.execute("SELECT rowid, id FROM memories").fetchall())
    ranked: dict[str, dict[str, list[str]]] = {"vector": {}, "lexical": {}, "fused": {}, "pipeline": {}}

    def own(q_user: str, memory_id: str, scope: str, where: str, qid: str) -> str:
        user, turn = turn_of.get(memory_id, ("<unknown>", ""))
        if user != q_user or scope != str(ScopeKey.private(TENANT, q_user)):
            raise CrossUserHit(f"{where}: question {qid} of {q_user} got memory {memory_id} of {user} in {scope}")
        return turn

    timing = {"vector": 0.0, "lexical": 0.0, "fused": 0.0, "pipeline": 0.0}
    for q in ds.questions:
        scopes = ScopeSet.of(ScopeKey.private(TENANT, q.user))
        (vec,) = await backend._embed([q.text])
        t0 = time.perf_counter()
        v = backend.search_vector(scopes, vec, limit=DEPTH, now=ds.now)
        t1 = time.perf_counter()
        lx = backend.search_lexical(scopes, q.text, limit=DEPTH, now=ds.now)
        t2 = time.perf_counter()
        fused = (await backend.search(SearchQuery(scopes, q.text, limit=DEPTH, now=ds.now))).hits
        t3 = time.perf_counter()
        timing["vector"] += t1 - t0
        timing["lexical"] += t2 - t1
        timing["fused"] += t3 - t2
        ranked["vector"][q.id] = [own(q.user, rowid_to_id[r], str(s), "vector", q.id) for s, r, _ in v]
        ranked["lexical"][q.id] = [own(q.user, rowid_to_id[r], str(s), "lexical", q.id) for s, r, _ in lx]
        ranked["fused"][q.id] = [own(q.user, h.memory.id, str(h.scope), "fused", q.id) for h in fused]
    # the memories were written straight into the store (dated by session): bind it to this fresh state
    bridge = MemoryBridge.with_backend(backend, home / "bridge", clock=lambda: ds.now, reinitialise=True, **bridge_options)
    try:
        for q in ds.questions:
            t0 = time.perf_counter()
            result = await bridge.recall(identity(q.user), q.text, budget_tokens=20_000)
            timing["pipeline"] += time.perf_counter() - t0
            ranked["pipeline"][q.id] = [own(q.user, item.memory_id, item.scope, "pipeline", q.id) for item in result.items][:DEPTH]
    finally:
        await bridge.aclose()
    n = len(ds.questions)
    cost = {f"{m}_ms_per_question": round(1000 * s / n, 3) for m, s in timing.items()}
    cost["put_many_ms_per_memory"] = round(1000 * ingest_s / sum(len(t) for t in ds.turns.values()), 3)
    return ranked, cost


async def run(seed: int = 2, users_per_lang: int = 6, sessions: int = 25, only: tuple[str, ...] | None = None) -> dict[str, Any]:
    ds = generate(seed, users_per_lang, sessions)
    report: dict[str, Any] = {
        "seed": seed, "users": len(ds.turns), "memories": sum(len(t) for t in ds.turns.values()), "questions": len(ds.questions),
        "memories_per_user": round(sum(len(t) for t in ds.turns.values()) / len(ds.turns), 1), "leaks": 0, "methods": {}, "cost": {},
    }
    for name, make in embedders().items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="recall-locomo-") as tmp:
            ranked, cost = await measure(ds, make(), Path(tmp))
        report["methods"][name] = {method: score(ds, r) for method, r in ranked.items()}
        report["cost"][name] = cost
    return report


def table(report: dict[str, Any]) -> str:
    lines = [f"seed {report['seed']}: {report['users']} users, {report['memories']} memories ({report['memories_per_user']} a user), "
             f"{report['questions']} questions, leaks {report['leaks']}", ""]
    cats = ["single-hop", "multi-hop", "temporal", "update"]
    lines.append(f"{'embedder':<9} {'method':<9} {'hit@5':>6} {'hit@10':>6} {'en@5':>6} {'zh@5':>6} " + " ".join(f"{c[:6] + '@5':>9}" for c in cats))
    for name, methods in report["methods"].items():
        for method, s in methods.items():
            cells = [s["all"]["hit@5"], s["all"]["hit@10"], s["en"]["hit@5"], s["zh"]["hit@5"]] + [s.get(c, {}).get("hit@5", float("nan")) for c in cats]
            lines.append(f"{name:<9} {method:<9} " + " ".join(f"{v:>6.3f}" for v in cells[:4]) + " " + " ".join(f"{v:>9.3f}" for v in cells[4:]))
    lines += ["", "ms per question: " + "; ".join(f"{n}: " + ", ".join(f"{k.split('_')[0]} {v}" for k, v in c.items() if k.endswith("question")) for n, c in report["cost"].items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=2, help="2 is the reported seed; 1 is the one weights were tuned on")
    parser.add_argument("--users", type=int, default=6, help="users per language")
    parser.add_argument("--sessions", type=int, default=25)
    parser.add_argument("--only", nargs="*", default=None, help="only these embedders (hashing, semantic, hybrid)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        report = asyncio.run(run(args.seed, args.users, args.sessions, tuple(args.only) if args.only else None))
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
