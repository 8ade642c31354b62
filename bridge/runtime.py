"""What every operation handler runs against: the backend, the state, the policy and the knobs.

One object instead of a hub class: handlers (`bridge/handlers/`) and recall stages
(`bridge/recall/`) are functions of (runtime, identity, operation), so each is small, testable
on its own and unaware of the facade or of any door (CLI, HTTP) above it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from adapters.base import MemoryBackend
from adapters.live import live_view, raw_store
from bridge.capture.extract import Extractor, RuleExtractor
from bridge.operations.limits import Limits
from bridge.policy import Policy
from bridge.policy.quotas import QuotaConfig
from bridge.recall.config import BudgetConfig, TokenCounter
from bridge.recall.config import RankingConfig
from bridge.roles.book import RoleBook
from bridge.state.protocols import BridgeState
from identity.providers.api_keys import ApiKeyStore
from identity.sessions import SessionRegistry

__all__ = ["BridgeRuntime"]


@dataclass
class BridgeRuntime:
    backend: MemoryBackend
    state: BridgeState
    sessions: SessionRegistry
    policy: Policy = field(default_factory=Policy)
    ranking: RankingConfig = field(default_factory=RankingConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    limits: Limits = field(default_factory=Limits)
    extractor: Extractor = field(default_factory=RuleExtractor)
    token_counter: TokenCounter | None = None
    server_side_extraction: bool = False
    clock: Callable[[], float] = time.time
    #: Storage quotas per tenant and per user (bridge/policy/quotas.py); none configured by default.
    quotas: QuotaConfig = field(default_factory=QuotaConfig)
    #: The loaded role file (bridge/roles/), or None: no role restrictions, no federated injection.
    roles: RoleBook | None = None
    #: Damaged records a backend took out of service, waiting for their audit row (a backend's
    #: quarantine hook appends; `MemoryBridge.execute` audits them after the operation).
    quarantined: list[Any] = field(default_factory=list)
    #: The API-key store the door authenticates keys with (the HTTP service sets it), for the
    #: key-management operations (bridge/handlers/keys.py); None: they refuse, saying why.
    api_keys: ApiKeyStore | None = None
    #: The raw store, expired records included: only for the paths that must see them to remove
    #: them (the purge, the write path and recovery, erasure, the recall guard). Set from `backend`.
    store: MemoryBackend = field(init=False)

    def __post_init__(self) -> None:
        # `backend` is what every handler reads through: the store seen by the one liveness rule
        # (adapters/live.py), judged at this runtime's clock as it is when read (tests move it).
        self.store = raw_store(self.backend)
        self.backend = live_view(self.store, lambda: self.clock())
