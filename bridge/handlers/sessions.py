"""Handlers of session binding: a new session, or a fork that keeps the identity."""

from __future__ import annotations

from bridge.operations import ForkSession, StartSession
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity

__all__ = ["start_session", "fork_session"]


async def start_session(rt: BridgeRuntime, identity: MemoryIdentity, op: StartSession) -> MemoryIdentity:
    return rt.sessions.start_session(identity)


async def fork_session(rt: BridgeRuntime, identity: MemoryIdentity, op: ForkSession) -> MemoryIdentity:
    return rt.sessions.fork(identity, op.parent_session_id or identity.session_id)


