"""Re-embedding in place while another process holds the store (a running service) is refused
before anything changes — the service would otherwise answer every recall with a 503 — and a
store being re-embedded is not opened meanwhile."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.local import LocalBackend
from adapters.local.errors import StoreInUse
from adapters.local.holders import StoreHold
from adapters.shared.embedding import HashingEmbedder
from bridge.doors.cli.main import main
from bridge.facade import MemoryBridge
from identity.model import MemoryIdentity

ALICE = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="assistant", session_id="s-alice")


def _store(home: Path) -> None:
    async def run() -> None:
        bridge = MemoryBridge.open_local(home, embedder=HashingEmbedder(128))
        try:
            await bridge.remember(ALICE, "I prefer oat milk", "preference")
        finally:
            await bridge.aclose()

    asyncio.run(run())


def _signature(home: Path) -> str:
    backend = LocalBackend(home / "store", expect_existing=True)
    try:
        return backend.embedder.signature
    finally:
        asyncio.run(backend.aclose())


def test_reembed_refuses_while_another_process_has_the_store_open(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIKING_BRIDGE_EMBEDDER", raising=False)
    home = tmp_path / "home"
    _store(home)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from adapters.local import LocalBackend
        backend = LocalBackend({str(home / 'store')!r}, expect_existing=True)
        print("open", flush=True)
        sys.stdin.read()  # hold the store until told to stop
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        assert main(["re-embed", "--home", str(home), "--embedder", "hashing"]) == 2
        err = capsys.readouterr().err
        assert "another process has this store open" in err and "--into" in err
        assert _signature(home) == HashingEmbedder(128).signature  # nothing changed
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert main(["re-embed", "--home", str(home), "--embedder", "hashing"]) == 0  # alone now: it runs
    assert _signature(home) == HashingEmbedder().signature


def test_a_store_held_alone_is_not_opened_meanwhile(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    hold = StoreHold(store)
    try:
        with hold.exclusive("test"):
            with pytest.raises(StoreInUse, match="being re-embedded"):
                StoreHold(store)
        StoreHold(store).close()  # released: others open it again
    finally:
        hold.close()
