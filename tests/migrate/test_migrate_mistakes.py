"""A mistyped migration is an error, never `"ok": true` with nothing copied: a source directory
that does not exist (and is not created), a tenant the source holds no memories of."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.facade import MemoryBridge
from bridge.migrate.cli import main
from tests.migrate.kit import seed

# the PostgreSQL fixtures (tests/migrate/conftest.py re-exports them): one server per session


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    import asyncio

    async def _seed() -> None:
        bridge = MemoryBridge.open_local(tmp_path / "old")
        try:
            await seed(bridge)
        finally:
            await bridge.aclose()

    asyncio.run(_seed())
    return tmp_path / "old"


def test_a_mistyped_source_directory_is_refused_and_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typo = tmp_path / "typo"
    assert main(["--from", f"local:{typo}", "--to", f"local:{tmp_path / 'new'}", "--tenant", "acme"]) == 2
    err = capsys.readouterr().err
    assert "no local store there" in err and not typo.exists()


def test_a_tenant_without_memories_is_an_error_naming_it(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--from", f"local:{source}", "--to", f"local:{tmp_path / 'new'}", "--tenant", "acmee", "--no-global"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "'acmee'" in captured.err and "--allow-empty" in captured.err and '"ok": true' not in captured.out
    assert main([*argv, "--verify-only"]) == 2  # a comparison of nothing proves nothing either
    capsys.readouterr()
    assert main([*argv, "--allow-empty"]) == 0  # said on purpose: accepted
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["copied"] == 0
    assert main(["--from", f"local:{source}", "--to", f"local:{tmp_path / 'new'}", "--tenant", "acme", "--no-global"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["copied"] > 0


def test_local_to_postgres_keeps_the_source_embedder(tmp_path: Path, pg_db, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL's own default is hashing(384): a source in another vector space must arrive in
    that same space (here hashing(128), as a stand-in for a hybrid store), not silently move."""
    import asyncio

    from adapters.postgres import PostgresBackend
    from adapters.shared.embedding import HashingEmbedder

    async def _seed() -> None:
        bridge = MemoryBridge.open_local(tmp_path / "old", embedder=HashingEmbedder(128))
        try:
            await seed(bridge)
        finally:
            await bridge.aclose()

    asyncio.run(_seed())
    monkeypatch.setenv("VIKING_BRIDGE_STATE_MIGRATE_URL", pg_db.owner_url)
    monkeypatch.delenv("VIKING_BRIDGE_EMBEDDER", raising=False)
    assert main(["--from", f"local:{tmp_path / 'old'}", "--to", f"postgres:{pg_db.app_url}", "--tenant", "acme"]) == 0, capsys.readouterr().err
    target = PostgresBackend(pg_db.app_url, migrate_url=pg_db.owner_url, embedder=HashingEmbedder(128))
    target.open_sync()  # refuses (EmbedderMismatch) if the store was built with another embedder
    asyncio.run(target.aclose())
    # a target already in another space is refused with both named and how to choose
    capsys.readouterr()
    other = tmp_path / "other"
    bridge = MemoryBridge.open_local(other, embedder=HashingEmbedder(64))
    asyncio.run(bridge.aclose())
    assert main(["--from", f"local:{other}", "--to", f"postgres:{pg_db.app_url}", "--tenant", "acme", "--allow-empty"]) == 2
    err = capsys.readouterr().err
    assert "hashing" in err and "VIKING_BRIDGE_EMBEDDER" in err
