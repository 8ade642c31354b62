"""The one id grammar every tenant, user, department, workspace, agent and session id obeys.

Ids travel into SQL, backend filters, URIs (`viking://user/<id>/...`) and HTTP headers, so the
grammar is the first wall against injection and path traversal. It is deliberately permissive
about *letters* (any unicode letter or digit, so `研发部` or `zoë` are fine) and deliberately
strict about *structure* and about *what a human would see*:

    id      := 1..128 code points, NFC-normalised and NFKC-stable
    char    := unicode letter (L*) | unicode digit (Nd) | one of  _ - . @ % * + = ~
    rules   := first char is a letter or digit or `_`
               no `..` anywhere, no trailing `.`
               no whitespace, control, format (zero-width, bidi), surrogate or private-use chars
               no path separators (`/`, `\\`), quotes, colons or other punctuation
               no default-ignorable code point, no Hangul filler (U+3164, U+115F, U+1160, U+FFA0)
               one script per id (below)

Characters such as `_ % * .` are allowed *because* they are the classic escaping traps (SQL
LIKE wildcards, glob stars); allowing them forces every adapter to treat ids as opaque exact
values, and the contract suite proves that `john_doe` never matches `john-doe` and `foo` never
matches `foobar`. What a backend cannot carry verbatim, its adapter must encode injectively.

Look-alikes and invisibles. An id names a principal to *humans* too (an
admin granting access, an audit reader), so two ids that render alike must not both be valid:

- NFKC-stable: `NFKC(id) == id`. This refuses fullwidth `ａｄｍｉｎ`, math-bold `𝐚𝐝𝐦𝐢𝐧`, ligatures
  (`ﬁle`), superscripts, the long s, Kelvin/Ohm signs and every other compatibility character;
  the message shows the plain spelling to use instead.
- No invisible letters: the Hangul fillers are letters (Lo) that render as nothing, and every
  other default-ignorable code point (ZWJ, variation selectors, tags, ...) is refused too.
- One script: the Unicode scripts (Scripts.txt) of an id's characters, ignoring Common and
  Inherited (ASCII digits and the allowed punctuation are Common), must be a single script —
  or fit one writing system that mixes scripts by nature (UTS #39 "Highly Restrictive"):
  Latin + Han + Hiragana + Katakana (Japanese), Latin + Han + Hangul (Korean), Latin + Han +
  Bopomofo (Chinese). So Cyrillic `а` in `аlice`, Greek `ο` in `rοot`, Arabic-Indic digits in a
  Latin id are refused, while `研发部`, `ws研发部`, `ユーザー1`, `東京タワー`, `zoë` and `john_doe`
  stay valid. (A CJK look-alike of a Latin letter dropped into an ASCII id is caught by the
  next rule.)
- No impersonation of an ASCII id: a non-ASCII id whose every character is ASCII or the TR39
  look-alike of an ASCII letter or digit (`υ17` in Greek for `u17`, Cyrillic `сор` for `cop`,
  Latin `ɑdmin` with U+0251) is refused — one script, yet it renders as an ASCII id. This is
  UTS #39's whole-script-confusable test, narrowed to the ASCII ids operators actually type.

  Look-alikes *within* ASCII (`rn` vs `m`, `l` vs `1`) are not a unicode problem and are not
  caught. The tests check every single-character TR39 confusable substitution into a sample of
  ASCII ids. The data (scripts, look-alikes) is generated into `identity/_script_data.py`.

Never normalise silently: an id that is not already NFC (or NFKC-stable) is rejected, so two
spellings of one name cannot become two principals that look identical to a human.
"""

from __future__ import annotations

import unicodedata

from identity.errors import InvalidInput
from identity.scripts import COMMON_SCRIPTS, ascii_lookalike, script_of

MAX_ID_LENGTH = 128
ALLOWED_PUNCTUATION = frozenset("_-.@%*+=~")
_ALLOWED_FIRST_PUNCTUATION = frozenset("_")


#: Letters that render as nothing (Lo, yet invisible): accepted by "is a letter", refused here.
HANGUL_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")

#: Default_Ignorable_Code_Point (DerivedCoreProperties.txt). Most are format (Cf) or marks and
#: already fail the character grammar; the ones that are letters are caught by this set.
_DEFAULT_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)

#: Writing systems that mix scripts by nature: UTS #39 "Highly Restrictive" — Latin may join
#: the CJK systems (`ws研发部`, `AI研究所`, `ユーザーA`), nothing else mixes.
_MIXED_SCRIPT_SYSTEMS = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),  # Japanese
    frozenset({"LATIN", "HAN", "HANGUL"}),  # Korean
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),  # Chinese with zhuyin
)


def is_default_ignorable(ch: str) -> bool:
    code = ord(ch)
    return any(start <= code <= end for start, end in _DEFAULT_IGNORABLE_RANGES)


class InvalidIdError(InvalidInput):
    """An id that breaks the grammar above. The message names the field and the rule."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        self.field = field
        self.rule = rule
        shown = _shown(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        super().__init__(f"invalid {field} {shown}: {rule}")


def _shown(value: object) -> str:
    """`repr` for the message, safe for any value (a 5,000-digit int cannot be repr'd)."""
    if isinstance(value, (str, bytes, type(None), bool, float)) or (isinstance(value, int) and value.bit_length() < 64):
        return repr(value[:80] if isinstance(value, (str, bytes)) else value)
    return f"<{type(value).__name__}>"


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
    if not value.isascii():  # ASCII ids are NFKC-stable, visible and single-script by construction
        _check_lookalikes(value, field)
    first = value[0]
    if not (first in _ALLOWED_FIRST_PUNCTUATION or _char_allowed(first) and first not in ALLOWED_PUNCTUATION):
        raise InvalidIdError(field, value, "must start with a letter, a digit or '_'")
    if ".." in value:
        raise InvalidIdError(field, value, "contains '..'")
    if value.endswith("."):
        raise InvalidIdError(field, value, "ends with '.'")
    return value


def _check_lookalikes(value: str, field: str) -> None:
    for ch in value:
        if ch in HANGUL_FILLERS or is_default_ignorable(ch):
            raise InvalidIdError(
                field, value, f"contains the invisible character U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')})"
            )
    folded = unicodedata.normalize("NFKC", value)
    if folded != value:
        raise InvalidIdError(
            field, value, f"is not NFKC-stable (compatibility characters such as fullwidth, ligature or math letters; write {folded!r})"
        )
    scripts = {script_of(ch) for ch in value} - COMMON_SCRIPTS
    if len(scripts) > 1 and not any(scripts <= system for system in _MIXED_SCRIPT_SYSTEMS):
        raise InvalidIdError(field, value, f"mixes scripts ({', '.join(sorted(s.lower() for s in scripts))}); use one script per id")
    impersonated = _ascii_skeleton(value)
    if impersonated is not None:
        raise InvalidIdError(field, value, f"looks like the ASCII id {impersonated!r} (look-alike letters); use {impersonated!r} itself")


def _ascii_skeleton(value: str) -> str | None:
    """The ASCII id `value` is indistinguishable from, if every character is ASCII or a TR39
    look-alike of an ASCII letter or digit (`υ17` -> `u17`, `ɑdmin` -> `admin`); else None."""
    out = []
    for ch in value:
        if ch.isascii():
            out.append(ch)
            continue
        twin = ascii_lookalike(ch)
        if twin is None:
            return None
        out.append(twin)
    return "".join(out)


def is_valid_id(value: object) -> bool:
    try:
        validate_id(value)
    except InvalidIdError:
        return False
    return True
