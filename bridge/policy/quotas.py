"""Storage quotas (seed 000 §7): how many memories, and how many bytes of content, a tenant and
each of its users may hold. Configuration; the counters and their atomic check are the state's
(`UsageLedger`, with `check_quota` in `bridge/state/common.py`), so two writers cannot both pass.

A quota is a pair of limits (memories, bytes), each optional. The deployment default applies to
every tenant (the tenant as a whole) and to every user inside it (memories that user authored);
a tenant may override either level. The counts live in the bridge state (`bridge/state/protocols.py UsageLedger`:
one counter row per tenant and per user, changed by a conditional UPDATE, so two writers or two
replicas can never both take the last slot); `bridge.writes` reserves before any intent or put,
and forget, reject, erasure and the expiry purge give the space back.

Content bytes are UTF-8 bytes of the memory's text (what a store must keep); metadata is bounded
separately by `Limits`. Counting happens only while a quota is configured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from bridge.state.records import QuotaLimits, Usage

__all__ = ["QuotaLimits", "QuotaConfig", "Usage", "content_bytes"]


@dataclass(frozen=True)
class QuotaConfig:
    """The deployment's quotas: defaults per tenant and per user, and per-tenant overrides
    (`overrides[tenant] = (tenant limits, user limits)`; None in a pair keeps the default)."""

    tenant: QuotaLimits = QuotaLimits()
    user: QuotaLimits = QuotaLimits()
    overrides: Mapping[str, tuple[QuotaLimits | None, QuotaLimits | None]] = field(default_factory=dict)

    def limits_for(self, tenant_id: str) -> tuple[QuotaLimits, QuotaLimits]:
        """(the tenant's limits, each of its users' limits)."""
        tenant, user = self.overrides.get(tenant_id, (None, None))
        return tenant or self.tenant, user or self.user

    @property
    def enabled(self) -> bool:
        return self.tenant.limited or self.user.limited or any((t is not None and t.limited) or (u is not None and u.limited) for t, u in self.overrides.values())


def content_bytes(content: str) -> int:
    return len(content.encode("utf-8"))


