"""Exactly-once under SIGKILL, the short version of `fault_audit.py` beside it (which runs 25
rounds, 4 writers, and on two PostgreSQL replicas): a real `viking-bridge serve` on the local store
is killed twice while two writers write; the writers retry every unanswered write with its
idempotency key, as a client must. Every acknowledged write is then stored exactly once and every
stored memory has exactly one audit row (`write` or `recovered`)."""

from __future__ import annotations

from pathlib import Path

from tests.service.fault_audit import run_local


def test_sigkilled_service_loses_nothing_duplicates_nothing_and_audits_each_write_once(tmp_path: Path) -> None:
    result = run_local(rounds=2, n_writers=2, seed=11, tmp=tmp_path)
    assert result["acknowledged"] > 0, result
    assert result["lost"] == 0, f"acknowledged writes lost: {result}"
    assert result["duplicated"] == 0, f"a write stored twice: {result}"
    assert result["audited_not_once"] == 0, f"stored memories audited zero or several times: {result}"
