"""Contract-suite factories for OpenViking: `openviking` (api_key mode) and `openviking-trusted`.

Each test gets a FRESH, EMPTY backend: a new namespace (so every tenant maps to a brand-new
account on the server) and, on exit, every account of that namespace is deleted. The server is
shared per process and per auth mode: a local OpenViking 0.5.2 started on first use (see
`contract_tests/openviking_server/`) and stopped at interpreter exit.

A test that runs the suite in a CHILD pytest hands its servers down instead of letting the child
start its own (a start costs 40-130 s on a busy 2-core machine, and the default run spawns several
such children): `env = {**os.environ, **hand_down("api_key")}` starts or reuses this process's
server and names it in `VIKING_BRIDGE_TEST_OPENVIKING_SERVERS`; the child's `shared_server` uses a
named server that answers `/health` in the right mode, and never stops it. Sharing is safe because
every test works in a namespace of its own and drops it afterwards.

Live mode: with `OPENVIKING_URL` and `OPENVIKING_ROOT_API_KEY` set, that deployment is used
instead (its `/health` says which auth mode it runs; the other adapter reports itself
unavailable). Set `VIKING_BRIDGE_OPENVIKING_INSTALL=0` to forbid installing the server venv.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import AsyncIterator

import json

import httpx

from adapters.openviking import OpenVikingBackend
from contract_tests.openviking_server.server import OpenVikingServer, default_venv_path, venv_status
from contract_tests.registry import register_adapter
from identity.errors import ConfigurationError

__all__ = ["shared_server", "hand_down", "live_settings", "openviking_backend", "fresh_backend", "insert_unscoped"]

HANDED_DOWN = "VIKING_BRIDGE_TEST_OPENVIKING_SERVERS"  # JSON {auth_mode: [url, root key]} from a parent run

_servers: dict[str, OpenVikingServer] = {}
_failures: dict[str, str] = {}
_inherited: dict[str, tuple[str, str] | None] = {}
_lock = threading.Lock()


def live_settings() -> tuple[str, str] | None:
    url, key = os.environ.get("OPENVIKING_URL"), os.environ.get("OPENVIKING_ROOT_API_KEY")
    return (url, key) if url and key else None


def _live_auth_mode(url: str) -> str | None:
    try:
        return httpx.get(f"{url.rstrip('/')}/health", timeout=5.0, trust_env=False).json().get("auth_mode")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


def _handed_down(auth_mode: str) -> tuple[str, str] | None:
    """The parent run's server for `auth_mode`, when one was named and answered in that mode.

    Asked once per process: the parent keeps its servers up until it exits, after its children.
    """
    if auth_mode not in _inherited:
        try:
            url, key = json.loads(os.environ.get(HANDED_DOWN) or "{}")[auth_mode]
        except (KeyError, ValueError, TypeError):
            _inherited[auth_mode] = None
        else:
            _inherited[auth_mode] = (url, key) if _live_auth_mode(url) == auth_mode else None
    return _inherited[auth_mode]


def shared_server(auth_mode: str) -> tuple[str, str]:
    """(url, root key) of the process-wide server for `auth_mode`, starting it on first use."""
    live = live_settings() or _handed_down(auth_mode)
    if live is not None:
        return live
    with _lock:
        if auth_mode in _failures:
            raise ConfigurationError(_failures[auth_mode])
        server = _servers.get(auth_mode)
        if server is None:
            try:
                server = OpenVikingServer(auth_mode=auth_mode).start()
            except Exception as exc:
                _failures[auth_mode] = f"local OpenViking server ({auth_mode}) failed to start: {exc}"
                raise
            _servers[auth_mode] = server
            atexit.register(server.stop)
        return server.url, server.root_api_key


def hand_down(*auth_modes: str) -> dict[str, str]:
    """Environment for a child pytest that lets it use this process's servers for `auth_modes`.

    Starts each server here if it is not running yet (a mode that cannot start is left out, and
    the child reports it unavailable with its own reason). Live mode needs no hand-down.
    """
    if live_settings() is not None:
        return {}
    servers: dict[str, list[str]] = json.loads(os.environ.get(HANDED_DOWN) or "{}")
    for mode in auth_modes:
        if _unavailable(mode) is None:
            with contextlib.suppress(Exception):
                servers[mode] = list(shared_server(mode))
    return {HANDED_DOWN: json.dumps(servers)} if servers else {}


def server_startup_seconds(auth_mode: str) -> float | None:
    server = _servers.get(auth_mode)
    return server.startup_seconds if server else None


def _unavailable(auth_mode: str) -> str | None:
    live = live_settings()
    if live is not None:
        mode = _live_auth_mode(live[0])
        if mode is None:
            return f"OPENVIKING_URL={live[0]} does not answer /health"
        if mode != auth_mode:
            return f"the live OpenViking deployment runs auth_mode={mode!r}, this adapter needs {auth_mode!r}"
        return None
    if auth_mode in _failures:
        return _failures[auth_mode]
    if _handed_down(auth_mode) is not None:
        return None
    status = venv_status()
    if status is not None and os.environ.get("VIKING_BRIDGE_OPENVIKING_INSTALL", "1") == "0":
        return f"{status}; installing is disabled by VIKING_BRIDGE_OPENVIKING_INSTALL=0"
    if status is not None and not os.access(default_venv_path().parent if default_venv_path().parent.exists() else Path.home(), os.W_OK):
        return f"{status}, and {default_venv_path().parent} is not writable"
    return None


@contextlib.asynccontextmanager
async def fresh_backend(auth_mode: str, **kw: object) -> AsyncIterator[OpenVikingBackend]:
    url, root = shared_server(auth_mode)
    namespace = "ct" + uuid.uuid4().hex[:12]
    with tempfile.TemporaryDirectory(prefix="vb-ov-keys-") as tmp:
        backend = OpenVikingBackend.connect(
            url, root, mode=auth_mode,  # type: ignore[arg-type]
            key_store_path=str(Path(tmp) / "keys.json") if auth_mode == "api_key" else None,
            namespace=namespace, **kw,  # type: ignore[arg-type]
        )
        try:
            yield backend
        finally:
            try:
                await backend.drop_namespace()
            finally:
                await backend.aclose()


async def insert_unscoped(backend: OpenVikingBackend, tenant_id: str, content: str) -> None:
    """Plant memory-looking files whose scope cannot be established, bypassing `put` (test hook).

    Every file sits inside a directory the contract test searches, named like one of our memory
    files (`m` + 32 hex), so only the record check stands between it and a hit:
    - no bridge header at all, in the tenant's `alice` private scope, in her `assistant` agent
      peer and in the tenant-shared scope (what a raw import or another client would leave);
    - a well-formed header whose `scope` names another place than the file's location (workspace
      `alpha` holding a record that claims `acme/user/alice`; department `sales` one that claims
      `acme/user/bob`) and one whose `id` names another file;
    - a header-less file in alice's server-extraction directory (`memories/preferences/`) with no
      capture record behind it.
    """
    import hashlib
    import json
    import time

    from adapters.openviking.record import HEADER_PREFIX
    from adapters.scopes import ScopeKey

    def mid(label: str) -> str:
        return "m" + hashlib.sha256(f"unscoped\x00{label}\x00{content}".encode()).hexdigest()[:32]

    def header(scope: str, memory_id: str) -> str:
        h = {"v": 1, "id": memory_id, "scope": scope, "kind": "note", "status": "active", "confidence": 1.0, "subject_user_id": None,
             "metadata": {}, "created_at": time.time(), "updated_at": time.time(),
             "provenance": {"author_user_id": "nobody", "author_agent_id": "nobody", "session_id": None, "source_message_ids": [],
                      "injected_by": None, "derived_from": [], "grant_id": None}}
        return f"{HEADER_PREFIX}{json.dumps(h, separators=(',', ':'))}-->\n"

    plants: list[tuple[ScopeKey, str, str]] = []  # (scope whose directory holds it, file name, body)
    for scope in (ScopeKey.private(tenant_id, "alice"), ScopeKey.agent(tenant_id, "assistant", "alice"), ScopeKey.tenant(tenant_id)):
        plants.append((scope, mid(f"bare {scope}") + ".md", content))
    ws_id = mid("ws")
    plants.append((ScopeKey.workspace(tenant_id, "alpha"), ws_id + ".md", header(str(ScopeKey.private(tenant_id, "alice")), ws_id) + content))
    dept_id = mid("dept")
    plants.append((ScopeKey.department(tenant_id, "sales"), dept_id + ".md", header(str(ScopeKey.private(tenant_id, "bob")), dept_id) + content))
    plants.append((ScopeKey.private(tenant_id, "alice"), mid("wrong id") + ".md", header(str(ScopeKey.private(tenant_id, "alice")), mid("other")) + content))
    for scope, name, body in plants:
        p = backend.mapper.principal(scope)
        uri = f"{p.memory_dir}/{name}"
        await backend._call(p, True, lambda a, u=uri, b=body: backend.client.write(a, u, b, mode="replace", wait=True))
    alice = backend.mapper.principal(ScopeKey.private(tenant_id, "alice"))
    extracted = f"{alice.user_root}/memories/preferences/{mid('extracted')}.md"
    await backend._call(alice, True, lambda a: backend.client.write(a, extracted, content, mode="replace", wait=True))


@register_adapter("openviking", description="OpenViking 0.5.2, api_key mode: one user (and key) per scope principal",
                  unavailable_reason=lambda: _unavailable("api_key"), insert_unscoped=insert_unscoped)
@contextlib.asynccontextmanager
async def openviking_backend() -> AsyncIterator[OpenVikingBackend]:
    async with fresh_backend("api_key") as backend:
        yield backend


@register_adapter("openviking-trusted", description="OpenViking 0.5.2, trusted mode: root key + identity headers",
                  unavailable_reason=lambda: _unavailable("trusted"), insert_unscoped=insert_unscoped)
@contextlib.asynccontextmanager
async def openviking_trusted_backend() -> AsyncIterator[OpenVikingBackend]:
    async with fresh_backend("trusted") as backend:
        yield backend
