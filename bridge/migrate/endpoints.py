"""Where a migration reads from and writes to: one backend named by a short spec, `KIND:WHERE`.

KIND is a name in the backend registry (`bridge/assembly/backends.py`), WHERE what that entry
reads it as:

    local:DIR              the embedded store of a bridge home (DIR/store, state DIR/bridge.sqlite3)
    postgres:URL           memories (and bridge state) on PostgreSQL; the owner URL for schema
                           migrations comes from VIKING_BRIDGE_STATE_MIGRATE_URL (default: URL)
    openviking:URL         an OpenViking server; its root key, mode and key store come from the
                           VIKING_BRIDGE_OPENVIKING__* settings
    viking:URL             hosted Viking Memory at URL; its collection(s), key (or AK/SK) and write
                           ledger come from the VIKING_BRIDGE_VIKING__* settings

Secrets never appear in a spec (a spec is echoed in reports and audit rows): they come from the
settings, as for `serve`. Every endpoint carries the bridge state that belongs with it (the home's
SQLite, or PostgreSQL's), so the migration's audit rows land where the target's operators will
read them. A source must already exist: a mistyped path is an error, never a new empty store.
Opening never creates a wider view than the backend's own: a migration is an operator action with
the storage's credentials, and every write it makes is still a scoped `put`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, AsyncIterator

from adapters.base import MemoryBackend
from adapters.errors import EmbedderMismatch
from adapters.shared.embedding import embedder_for_signature
from bridge.assembly.backends import OpenRequest, REGISTRY, backend_entry
from bridge.assembly.opening import open_state
from bridge.assembly.settings import BridgeSettings, load_bridge_settings
from bridge.errors import ConfigurationError
from bridge.state.protocols import BridgeState

__all__ = ["Endpoint", "open_endpoint", "open_target", "redact_spec", "kept_embedder"]


@dataclass(frozen=True)
class Endpoint:
    """An opened backend plus the bridge state kept beside it."""

    spec: str  # as given, credentials redacted
    backend: MemoryBackend
    state: BridgeState | None


def redact_spec(spec: str) -> str:
    """The spec with any `user:password@` in a URL replaced, for reports and audit rows."""
    kind, _, rest = spec.partition(":")
    if "@" in rest and "//" in rest:
        scheme, _, tail = rest.partition("//")
        rest = f"{scheme}//***@{tail.rpartition('@')[2]}"
    return f"{kind}:{rest}"


def endpoint_settings(spec: str, base: BridgeSettings | None = None) -> BridgeSettings:
    """The settings a spec stands for: the deployment's settings with the spec's place put in."""
    kind, sep, where = spec.partition(":")
    if not sep or kind not in REGISTRY or not where:
        raise ConfigurationError(f"not a backend spec: {redact_spec(spec)!r} (expected one of {', '.join(e.spec_usage for e in REGISTRY.values() if e.spec_usage)})")
    base = base or load_bridge_settings()
    return load_bridge_settings(**{**base.model_dump(), **backend_entry(kind).spec_settings(where, base)})


def kept_embedder(source: Endpoint) -> Any:
    """The embedder a migration's target is opened with when the deployment names none
    (`VIKING_BRIDGE_EMBEDDER=auto`): the source's own, rebuilt from its signature, so a hybrid
    store stays hybrid on PostgreSQL (whose own default is hashing) instead of silently moving to
    another vector space. None: the deployment chose one, or the source keeps its vectors
    server-side (openviking, viking), and the target's setting or default applies."""
    if load_bridge_settings().embedder != "auto":
        return None
    embedder = getattr(source.backend, "embedder", None)
    signature = getattr(embedder, "signature", None)
    if embedder is None or not isinstance(signature, str):
        return None
    return embedder_for_signature(signature) or embedder


@contextlib.asynccontextmanager
async def open_target(spec: str, source: Endpoint) -> AsyncIterator[Endpoint]:
    """`open_endpoint(spec)` for a migration's target, keeping the source's embedder
    (`kept_embedder`). A target that already holds vectors of another embedder is refused with
    the two named and how to choose, never written in two vector spaces."""
    embedder = kept_embedder(source)
    try:
        async with open_endpoint(spec, embedder=embedder) as target:
            yield target
    except EmbedderMismatch as exc:
        mine = getattr(getattr(source.backend, "embedder", None), "signature", "its own")
        raise ConfigurationError(
            f"{redact_spec(spec)}: {exc}; the source {source.spec} recalls with {mine}. Choose one: migrate into a new target "
            "(it keeps the source's embedder), or set VIKING_BRIDGE_EMBEDDER to the target's embedder to re-embed into it"
        ) from None


@contextlib.asynccontextmanager
async def open_endpoint(spec: str, *, embedder: object | None = None, source: bool = False) -> AsyncIterator[Endpoint]:
    """Open the backend `spec` names (see the module docstring); closed on exit.

    `embedder` is the embedder a *target* store is created with, so a migration into a new local
    store is also a re-embedding. `source=True`: the store must exist already."""
    settings = endpoint_settings(spec)
    entry = backend_entry(settings.backend)
    if source and entry.name == "local" and not (settings.home / "store").is_dir():
        raise ConfigurationError(f"{redact_spec(spec)}: no local store there (no {settings.home / 'store'}; is the path right?)")
    if not source and entry.name == "local":
        settings.home.mkdir(parents=True, exist_ok=True)
    state = open_state(settings)
    try:
        backend = entry.open(OpenRequest(settings, state, embedder=embedder, must_exist=source))
    except BaseException:
        await state.aclose()
        raise
    try:
        yield Endpoint(redact_spec(spec), backend, state)
    finally:
        try:
            await backend.aclose()
        finally:
            await state.aclose()
