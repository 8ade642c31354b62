"""Handlers of session binding: a new session, or a fork that keeps the identity."""

from __future__ import annotations

from bridge.operations import ForkSession, StartSession
from bridge.runtime import BridgeRuntime
from identity.model import MemoryIdentity

__all__ = ["start_session", "fork_session"]


async def start_session(rt: BridgeRuntime, identity: MemoryIdentity, op: StartSession) -> MemoryIdentity:
    return await rt.sessions.start_session_async(identity)


async def fork_session(rt: BridgeRuntime, identity: MemoryIdentity, op: ForkSession) -> MemoryIdentity:
    return await rt.sessions.fork_async(identity, op.parent_session_id or identity.session_id)


