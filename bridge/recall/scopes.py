"""Recall stage "scopes": the ScopeSet this recall may search — authorisation before retrieval.

Default scopes come from the policy; every `include_scopes` entry must be covered by an active
grant the policy matches to this identity; a `manifest_id` must name a manifest issued to
exactly this agent whose whole derivation chain is still live. `only_scopes` then narrows the
ScopeSet to the scopes it names, each of which must already be readable (a default scope, a share or team,
a scope of the manifest, or one an active grant covers): it narrows, never widens. Anything else raises.
"""

from __future__ import annotations


from adapters.scopes import ScopeSet
from bridge.errors import ManifestError, NotPermitted
from bridge.recall.visibility import readable_with_shares
from bridge.state.records import InjectionManifest
from identity.model import MemoryIdentity

from bridge.recall.context import RecallContext, RecallRuntime

__all__ = ["stage", "load_manifest_for"]


async def load_manifest_for(rt: RecallRuntime, child: MemoryIdentity, manifest_id: str) -> InjectionManifest:
    """The manifest if it is usable by exactly this child now; `ManifestError` otherwise."""
    manifest = await rt.state.manifests.get(manifest_id)
    if manifest is None:
        raise ManifestError(f"no injection manifest {manifest_id!r}")
    rt.policy.check_manifest_use(child, manifest, await rt.state.manifests.chain(manifest), rt.clock())
    return manifest


async def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    op, identity = ctx.op, ctx.identity
    grants = []
    if op.include_scopes:
        held = await rt.state.grants.for_grantee(identity.tenant_id, identity.user_id)
        now = rt.clock()
        grants = [rt.policy.authorise_grant(identity, key, held, now) for key in op.include_scopes]
    manifest = None if op.manifest_id is None else await load_manifest_for(rt, identity, op.manifest_id)
    base = rt.policy.readable_scopes(identity, op.purpose, grants=grants, manifest=manifest)
    scopes = await readable_with_shares(rt, identity, op.purpose, base)  # teams the agent belongs to and memories shared with it
    if op.only_scopes is not None:
        extra = [k for k in op.only_scopes if k not in scopes]
        if extra:  # named, and readable neither by default, by share nor by manifest: each needs an active grant
            held = await rt.state.grants.for_grantee(identity.tenant_id, identity.user_id)
            now = rt.clock()
            grants += [rt.policy.authorise_grant(identity, key, held, now) for key in extra]
            base = rt.policy.readable_scopes(identity, op.purpose, grants=grants, manifest=manifest)
            scopes = await readable_with_shares(rt, identity, op.purpose, base)
        missing = [str(k) for k in op.only_scopes if k not in scopes]
        if missing:  # fail closed: never search something else in place of what was named
            raise NotPermitted(f"{identity.principal} may not read {', '.join(missing)}")
        scopes = ScopeSet.from_entries(e for e in scopes if e.key in op.only_scopes)
    ctx.scopes = scopes
