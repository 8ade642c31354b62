"""The one id grammar every tenant, user, department, workspace, agent and session id obeys.

Ids travel into SQL, backend filters, URIs (`viking://user/<id>/...`) and HTTP headers, so the
grammar is the first wall against injection and path traversal. It is deliberately permissive
about *letters* (any unicode letter or digit, so `研发部` or `zoë` are fine) and deliberately
strict about *structure*:

    id      := 1..128 code points, NFC-normalised
    char    := unicode letter (L*) | unicode digit (Nd) | one of  _ - . @ % * + = ~
    rules   := first char is a letter or digit or `_`
               no `..` anywhere, no trailing `.`
               no whitespace, control, format (zero-width, bidi), surrogate or private-use chars
               no path separators (`/`, `\\`), quotes, colons or other punctuation

Characters such as `_ % * .` are allowed *because* they are the classic escaping traps (SQL
LIKE wildcards, glob stars); allowing them forces every adapter to treat ids as opaque exact
values, and the contract suite proves that `john_doe` never matches `john-doe` and `foo` never
matches `foobar`. What a backend cannot carry verbatim, its adapter must encode injectively.

Never normalise silently: an id that is not already NFC is rejected, so two spellings of one
name cannot become two principals that look identical to a human.
"""

from __future__ import annotations

import unicodedata

MAX_ID_LENGTH = 128
ALLOWED_PUNCTUATION = frozenset("_-.@%*+=~")
_ALLOWED_FIRST_PUNCTUATION = frozenset("_")


class InvalidIdError(ValueError):
    """An id that breaks the grammar above. The message names the field and the rule."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        self.field = field
        self.rule = rule
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"invalid {field} {shown}: {rule}")


def _char_allowed(ch: str) -> bool:
    if ch in ALLOWED_PUNCTUATION:
        return True
    category = unicodedata.category(ch)
    return category.startswith("L") or category == "Nd"


def validate_id(value: object, field: str = "id") -> str:
    """Return `value` unchanged if it is a valid id, else raise `InvalidIdError`."""
    if not isinstance(value, str):
        raise InvalidIdError(field, value, f"must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidIdError(field, value, "must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(field, value, f"longer than {MAX_ID_LENGTH} characters")
    if unicodedata.normalize("NFC", value) != value:
        raise InvalidIdError(field, value, "is not NFC-normalised unicode")
    for ch in value:
        if ch in "/\\":
            raise InvalidIdError(field, value, "contains a path separator")
        if not _char_allowed(ch):
            raise InvalidIdError(
                field, value, f"contains the disallowed character U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')})"
            )
    first = value[0]
    if not (first in _ALLOWED_FIRST_PUNCTUATION or _char_allowed(first) and first not in ALLOWED_PUNCTUATION):
        raise InvalidIdError(field, value, "must start with a letter, a digit or '_'")
    if ".." in value:
        raise InvalidIdError(field, value, "contains '..'")
    if value.endswith("."):
        raise InvalidIdError(field, value, "ends with '.'")
    return value


def is_valid_id(value: object) -> bool:
    try:
        validate_id(value)
    except InvalidIdError:
        return False
    return True
