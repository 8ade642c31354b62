"""The bridge's words: what a memory is (`Kind`) and why it is being recalled (`Purpose`).

Kind and visibility are separate axes: a `preference` can be private or (by promotion) shared,
and a workspace can hold facts, decisions and procedures alike.
"""

from __future__ import annotations

import enum

from bridge.errors import InvalidInput


class Kind(str, enum.Enum):
    PROFILE = "profile"  # who the user is
    PREFERENCE = "preference"  # how the user likes things done
    EVENT = "event"  # something that happened
    FACT = "fact"  # project / domain fact
    DECISION = "decision"  # an architecture or project decision
    PROCEDURE = "procedure"  # a command, workflow, debugging recipe
    EXPERIENCE = "experience"  # an agent's tool experience / successful trajectory
    STANDARD = "standard"  # a department standard (needs approval)
    NOTE = "note"  # anything else


class Purpose(str, enum.Enum):
    CHAT = "chat"
    CODING = "coding"


def parse_kind(value: object) -> Kind:
    try:
        return value if isinstance(value, Kind) else Kind(str(value))
    except ValueError:
        raise InvalidInput(f"unknown kind {value!r}; expected one of: {', '.join(k.value for k in Kind)}") from None


def parse_purpose(value: object) -> Purpose:
    try:
        return value if isinstance(value, Purpose) else Purpose(str(value))
    except ValueError:
        raise InvalidInput(f"unknown purpose {value!r}; expected one of: {', '.join(p.value for p in Purpose)}") from None


#: A memory's retrieval tier (seed 002: hot / warm / cold), kept in its `tier` metadata key;
#: role files budget by it, and a write naming any other tier is refused (bridge/operations/fields.py).
TIER_KEY = "tier"
TIERS = ("hot", "warm", "cold")


#: The audience entry meaning "every agent acting for the memory's user".
EVERY_AGENT = "*"

#: Team ids starting with this name a team's narrowed place (team memory written with an explicit
#: `visible_to`): no member reads it in full, only the listed agents read exactly their memories.
#: No team may be created with such an id (bridge/operations/fields.py `team_ident`).
NARROWED_TEAM_PREFIX = "_narrowed~"


#: Metadata keys the bridge itself writes (promotion lineage, author tenant, manifest); callers
#: may not set them, so the bridge can trust them when it reads them back.
RESERVED_METADATA_PREFIX = "vb."
