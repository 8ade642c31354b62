"""README statements that no code block shows, checked directly: what the bridge home and its
files look like on disk ("Security notes")."""

from __future__ import annotations

import stat
from pathlib import Path

from bridge import MemoryBridge
from identity import ApiKeyStore
from tests.kit import make_identity


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_home_is_0700_and_every_sqlite_file_0600_while_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bridge = MemoryBridge.open_local(home)
    keys = ApiKeyStore(tmp_path / "keys" / "keys.sqlite3")
    try:
        await bridge.remember(make_identity(), "I prefer tea", "preference")
        keys.issue(tenant_id="acme", user_id="alice", agent_id="assistant")
        files = [p for p in [*home.rglob("*"), *(tmp_path / "keys").rglob("*")] if p.is_file()]
        assert any(p.name.endswith("-wal") for p in files), files  # checked while the journals exist
        assert _mode(home) == 0o700
        loose = {str(p.relative_to(tmp_path)): oct(_mode(p)) for p in files if _mode(p) & 0o077}
        assert not loose, f"readable by others: {loose}"
    finally:
        keys.close()
        await bridge.aclose()
