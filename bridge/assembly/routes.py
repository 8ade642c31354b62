"""The routing table of a service in front of several backends (`VIKING_BRIDGE_BACKEND=routed`,
`VIKING_BRIDGE_ROUTES_FILE`): which named backend holds which tenant's memories.

    global = "main"                       # the global scope's home (required)

    [tenants]                             # every tenant served; any other is refused
    acme = "hosted"
    dev = "main"
    globex = "shard2"

    [backends.main]                       # a name, then the settings of one backend: a key of
    backend = "local"                     # BridgeSettings each (the service's own settings are
    home = "/var/lib/viking-bridge/main"  # the defaults), secrets as `<name>_file` too

    [backends.hosted]
    backend = "viking"
    viking = { url = "https://...", collection = "acme_mem", api_key_file = "/run/secrets/viking" }

    [backends.shard2]
    backend = "postgres"
    memory_url_file = "/run/secrets/shard2-url"

Why a file and not environment variables: a table of tenants grows with the deployment and is
reviewed as one document. Each backend is opened through the registry (bridge/assembly/backends.py)
exactly as it would be alone; the bridge state (grants, manifests, audit, sessions) stays the
service's one state, whichever backend a tenant's memories are on. A tenant missing from the
table is refused at its first call (`TenantNotRouted`), never defaulted.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from bridge.errors import ConfigurationError
from identity.ids import InvalidIdError, validate_id

__all__ = ["RoutingTable", "load_routes"]

_TOP = {"global", "tenants", "backends"}


@dataclass(frozen=True)
class RoutingTable:
    global_home: str
    tenants: Mapping[str, str]
    #: name -> the raw settings of that backend (validated when it is opened)
    backends: Mapping[str, Mapping[str, Any]]


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.replace("_", "a").replace("-", "a").isalnum() or len(value) > 64:
        raise ConfigurationError(f"{where}: {value!r} is not a backend name (letters, digits, - and _)")
    return value


def load_routes(path: Path) -> RoutingTable:
    """Read and check the table: every tenant and the global scope routed to a defined backend,
    every backend naming a registered kind other than `routed`, no two local backends on one home."""
    where = f"VIKING_BRIDGE_ROUTES_FILE {path}"
    try:
        doc = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigurationError(f"{where} cannot be read: {type(exc).__name__}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{where} is not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - _TOP)
    if unknown:
        raise ConfigurationError(f"{where}: unknown key(s) {', '.join(unknown)} (expected global, [tenants], [backends.NAME])")
    backends = doc.get("backends")
    if not isinstance(backends, dict) or not backends:
        raise ConfigurationError(f"{where}: no [backends.NAME] table")
    for name, settings in backends.items():
        _name(name, f"{where} [backends]")
        if not isinstance(settings, dict) or not isinstance(settings.get("backend"), str):
            raise ConfigurationError(f"{where} [backends.{name}]: needs backend = \"local\" | \"postgres\" | \"viking\" | \"openviking\"")
        if settings["backend"] == "routed":
            raise ConfigurationError(f"{where} [backends.{name}]: a routed backend cannot route to another routed backend")
    if "global" not in doc:
        raise ConfigurationError(f"{where}: global = \"NAME\" is required (the backend holding the global scope, read by every identity)")
    home = _name(doc["global"], f"{where} global")
    tenants = doc.get("tenants", {})
    if not isinstance(tenants, dict):
        raise ConfigurationError(f"{where}: [tenants] must be a table of tenant = \"backend name\"")
    for tenant, target in tenants.items():
        try:
            validate_id(tenant, "tenant_id")
        except InvalidIdError as exc:
            raise ConfigurationError(f"{where} [tenants]: {exc}") from None
        _name(target, f"{where} [tenants] {tenant}")
    missing = sorted({t for t in [home, *tenants.values()] if t not in backends})
    if missing:
        raise ConfigurationError(f"{where}: routes to undefined backend(s) {', '.join(missing)}")
    return RoutingTable(home, dict(tenants), {n: dict(s) for n, s in backends.items()})
