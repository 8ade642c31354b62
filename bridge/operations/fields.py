"""How every operation field is checked: one small function per kind of value.

Each returns the normalised value or raises `InvalidInput` naming the field and the rule, so an
operation's `__post_init__` reads as a list of field checks. Text must be encodable (no lone
surrogates), ids obey `identity.ids`, metadata values are JSON-safe scalars.
"""

from __future__ import annotations

import math
from collections.abc import Iterable as IterableABC
from collections.abc import Mapping as MappingABC
from types import MappingProxyType
from typing import Any, Mapping

from pydantic import ValidationError

from adapters.scopes import ScopeKey, Visibility
from bridge.errors import InvalidInput
from bridge.operations.limits import Limits
from bridge.results import MemoryRef, Message
from bridge.vocabulary import EVERY_AGENT, NARROWED_TEAM_PREFIX, RESERVED_METADATA_PREFIX, TIER_KEY, TIERS, Kind, Purpose, parse_kind, parse_purpose
from identity.ids import InvalidIdError, validate_id

_MAX_METADATA_INT = 2**63  # JSON-safe everywhere; a 5,000-digit int is not metadata
#: The longest a memory may be told to live (10 years): beyond it, "never expires" is meant.
MAX_TTL_S = 10 * 365 * 86400.0
#: The latest `expires_at` accepted at all (year 2286); `plan_write` checks it against the clock.
_MAX_EPOCH = 1e10


def shown(value: object) -> str:
    """A short repr for an error message that cannot itself fail (repr of a 5,000-digit int
    raises ValueError; an arbitrary object's repr may raise anything)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def kind(value: object) -> Kind:
    if not isinstance(value, str):  # parse_kind would str() it: 10**5000 and objects break that
        raise InvalidInput(f"kind must be a string, not {type(value).__name__}")
    return parse_kind(value)


def purpose(value: object) -> Purpose:
    if not isinstance(value, str):
        raise InvalidInput(f"purpose must be a string, not {type(value).__name__}")
    return parse_purpose(value)


def encodable(value: str, what: str) -> None:
    """`InvalidInput` for text some store cannot hold: lone surrogates (not UTF-8) and NUL, which
    PostgreSQL refuses in text and JSON. Refused here, for every store alike, so a memory the local
    store accepted can always be migrated, and a query with a NUL is the caller's mistake (400),
    not a backend failure."""
    if "\x00" in value:
        raise InvalidInput(f"{what} contains a NUL character, which not every store can hold")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} contains characters that are not valid Unicode text (lone surrogates)") from None


def text(value: object, what: str) -> str:
    """A non-empty string that every store can encode (`encodable`)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{what} must not be empty")
    encodable(value, what)
    return value


def within(value: str, what: str, limit: int) -> None:
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")


def ident(value: object, what: str) -> str:
    if not isinstance(value, str):  # InvalidIdError reprs the value, which can itself raise
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    try:
        return validate_id(value, what)
    except InvalidIdError as exc:
        raise InvalidInput(str(exc)) from None


def optional_ident(value: object, what: str) -> str | None:
    return None if value is None else ident(value, what)


def team_ident(value: object, what: str = "team_id") -> str:
    """A team id a caller may name: never one of the reserved narrowed places, which a team of
    that name would let every member read in full."""
    team = ident(value, what)
    if team.startswith(NARROWED_TEAM_PREFIX):
        raise InvalidInput(f"{what} {team!r} is reserved: team ids starting with {NARROWED_TEAM_PREFIX!r} name a team's narrowed memory")
    return team


def optional_team_ident(value: object, what: str = "team_id") -> str | None:
    return None if value is None else team_ident(value, what)


def scope_key(value: object, what: str = "scope") -> ScopeKey:
    if isinstance(value, ScopeKey):
        return value
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a scope like 'acme/ws/alpha', not {type(value).__name__}")
    try:
        return ScopeKey.parse(text(value, what))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"not a scope: {exc}") from None


def memory_ref(value: object) -> tuple[ScopeKey, str]:
    """(scope, memory id) from a MemoryRef, a (scope, id) pair or a {scope, memory_id} mapping."""
    if isinstance(value, MemoryRef):
        scope, memory_id = value.scope, value.memory_id
    elif isinstance(value, tuple) and len(value) == 2:
        scope, memory_id = value
    elif isinstance(value, MappingABC) and set(value) == {"scope", "memory_id"}:
        scope, memory_id = value["scope"], value["memory_id"]
    else:
        raise InvalidInput(f"not a memory reference: expected (scope, memory_id), got {type(value).__name__}")
    try:
        return scope_key(scope), ident(memory_id, "memory_id")
    except InvalidInput as exc:
        raise InvalidInput(f"not a memory reference: {exc}") from None


def visibility(value: object) -> Visibility | None:
    if value is None or isinstance(value, Visibility):
        return value
    try:
        return Visibility(value)
    except (ValueError, TypeError):
        raise InvalidInput(f"unknown visibility {shown(value)}; expected one of: {', '.join(v.value for v in Visibility)}") from None


def number(value: object, what: str, low: float, high: float) -> float:
    # no math.isfinite on an int: a 5,000-digit int overflows float conversion; compare it directly
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)) or not low <= value <= high:
        raise InvalidInput(f"{what} must be a number within [{low}, {high}], got {shown(value)}")
    return float(value)


def metadata(value: object) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, MappingABC):
        raise InvalidInput(f"metadata must be a mapping, not {type(value).__name__}")
    data = dict(value)
    for key, item in data.items():
        if not isinstance(key, str) or not key or len(key) > 64:
            raise InvalidInput(f"metadata key {shown(key)} must be a non-empty string of at most 64 characters")
        text(key, "metadata key")
        if key.startswith(RESERVED_METADATA_PREFIX):
            raise InvalidInput(f"metadata key {key!r} is reserved for the bridge (prefix {RESERVED_METADATA_PREFIX!r})")
        if key == TIER_KEY and item not in TIERS:
            raise InvalidInput(f"metadata {TIER_KEY!r} must be one of {', '.join(TIERS)} (the retrieval tiers role files budget by), not {shown(item)}")
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not -_MAX_METADATA_INT < item < _MAX_METADATA_INT:
                raise InvalidInput(f"metadata value for {key!r} is an integer outside ±2**63")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInput(f"metadata value for {key!r} must be a finite number")
        elif isinstance(item, str):
            encodable(item, f"metadata value for {key!r}")
        else:
            raise InvalidInput(f"metadata value for {key!r} must be a string, number, boolean or null")
    return MappingProxyType(data)


def check_metadata(values: Mapping[str, Any], limits: Limits) -> None:
    if len(values) > limits.max_metadata_keys:
        raise InvalidInput(f"metadata has {len(values)} keys; the limit is {limits.max_metadata_keys}")
    for key, item in values.items():
        if isinstance(item, str) and len(item) > limits.max_metadata_value_chars:
            raise InvalidInput(f"metadata value for {key!r} is longer than {limits.max_metadata_value_chars} characters")


def flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, not {type(value).__name__}")
    return value


def positive_int(value: object, what: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= high:
        raise InvalidInput(f"{what} must be an integer within [1, {high}], got {shown(value)}")
    return value


def sequence(value: object, what: str) -> tuple:
    if type(value) is tuple:  # the common, already-normalised case: no ABC check
        return value  # type: ignore[return-value]
    if isinstance(value, (str, bytes)) or not isinstance(value, IterableABC):
        raise InvalidInput(f"{what} must be a list, not {type(value).__name__}")
    return tuple(value)




def message(value: object) -> Message:
    if isinstance(value, Message):
        return value
    if not isinstance(value, MappingABC):
        raise InvalidInput(f"a message must be a mapping with role and content, not {type(value).__name__}")
    try:
        return Message(**{str(k): v for k, v in value.items()})
    except (ValidationError, TypeError) as exc:
        raise InvalidInput(f"not a message: {str(exc).splitlines()[0]}") from None


def expiry(expires_at: object, ttl_s: object) -> tuple[float | None, float | None]:
    """(expires_at, ttl_s) of a write, typed and bounded; at most one of them set.

    Whether `expires_at` lies in the future (and within `MAX_TTL_S` of now) needs the bridge's
    clock, so `bridge.writes.expiry_of` checks that when the write is planned."""
    if expires_at is not None and ttl_s is not None:
        raise InvalidInput("give expires_at or ttl_s, not both")
    if expires_at is not None:
        return number(expires_at, "expires_at", 0.0, _MAX_EPOCH), None
    if ttl_s is not None:
        value = number(ttl_s, "ttl_s", 0.0, MAX_TTL_S)
        if value <= 0.0:
            raise InvalidInput("ttl_s must be positive (a memory that is expired when written would never be seen)")
        return None, value
    return None, None


# The sharing fields (`visible_to`, `memory_type`) of Remember, Capture and SetVisibleTo: grammar
# only (ids, "*", the two writable memory types); who may share with whom is bridge/policy/sharing.py's.

#: How many agents one `visible_to` may name (a share is for a few named agents; "*" for all).
MAX_AUDIENCE = 64
#: Values a caller may give `memory_type`; "injected" is made by `Inject`, never written.
WRITABLE_MEMORY_TYPES = ("team", "private")


def visible_to_field(value: Any) -> tuple[str, ...] | None:
    """`None`, `["*"]`, or distinct agent ids (sorted); anything else is `InvalidInput`."""
    if value is None:
        return None
    names = sequence(value, "visible_to")
    if not names:
        raise InvalidInput('visible_to, when given, names at least one agent (or "*")')
    if len(names) > MAX_AUDIENCE:
        raise InvalidInput(f"visible_to names {len(names)} agents; the limit is {MAX_AUDIENCE} (use \"*\" for every agent)")
    out = {EVERY_AGENT if n == EVERY_AGENT else ident(n, "visible_to agent id") for n in names}
    if EVERY_AGENT in out and len(out) > 1:
        raise InvalidInput('visible_to is either ["*"] or a list of agent ids, not both')
    return tuple(sorted(out))


def memory_type_field(value: Any) -> str | None:
    if value is None:
        return None
    if value == "injected":
        raise InvalidInput('memory_type "injected" is made by inject (a parent agent\'s manifest), never written directly')
    if value not in WRITABLE_MEMORY_TYPES:
        raise InvalidInput(f"unknown memory_type {shown(value)}; expected team or private")
    return str(value)
