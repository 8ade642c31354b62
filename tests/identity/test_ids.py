"""The id grammar: strict about structure, permissive about letters, never silently normalising."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from identity import InvalidIdError, MemoryIdentity, validate_id
from identity.ids import ALLOWED_PUNCTUATION, MAX_ID_LENGTH


@pytest.mark.parametrize(
    "value",
    [
        "u17",
        "john_doe",
        "john-doe",
        "50%off",
        "glob*star",
        "v1.2.3",
        "alice@example.com",
        "a+b=c~d",
        "_private",
        "研发部",
        "zoë",
        "Ünïcödé",
        "ユーザー1",
        "a" * MAX_ID_LENGTH,
    ],
)
def test_accepted(value):
    assert validate_id(value) == value


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("", "must not be empty"),
        ("a" * (MAX_ID_LENGTH + 1), f"longer than {MAX_ID_LENGTH} characters"),
        (None, "must be a string, not NoneType"),
        (17, "must be a string, not int"),
        (b"bytes", "must be a string, not bytes"),
    ],
)
def test_rejected_shapes(value, rule):
    with pytest.raises(InvalidIdError, match=re.escape(rule)):
        validate_id(value)


@pytest.mark.parametrize(
    ("value", "char_name"),
    [
        ("a\x00b", "U+0000"),
        ("a\x1fb", "U+001F"),
        ("a\x7fb", "U+007F"),
        ("line\nbreak", "U+000A"),
        ("carriage\rreturn", "U+000D"),
        ("tab\there", "U+0009"),
        ("esc\x1b[31m", "U+001B"),
    ],
)
def test_control_characters_rejected(value, char_name):
    with pytest.raises(InvalidIdError, match=re.escape(f"disallowed character {char_name}")):
        validate_id(value)


@pytest.mark.parametrize(
    ("value", "char_name"),
    [
        (" alice", "SPACE"),
        ("alice ", "SPACE"),
        ("al ice", "SPACE"),
        ("alice\u00a0", "NO-BREAK SPACE"),
        ("alice\u3000", "IDEOGRAPHIC SPACE"),
        ("alice\u2028", "LINE SEPARATOR"),
        ("ali\u2009ce", "THIN SPACE"),
    ],
)
def test_whitespace_tricks_rejected(value, char_name):
    with pytest.raises(InvalidIdError, match=f"disallowed character U\\+[0-9A-F]{{4}} \\({char_name}\\)"):
        validate_id(value)


@pytest.mark.parametrize(
    ("value", "char_name"),
    [
        ("ali\u200bce", "ZERO WIDTH SPACE"),
        ("ali\u200dce", "ZERO WIDTH JOINER"),
        ("ali\u200cce", "ZERO WIDTH NON-JOINER"),
        ("\ufeffalice", "ZERO WIDTH NO-BREAK SPACE"),
        ("alice\u202egpj", "RIGHT-TO-LEFT OVERRIDE"),
        ("alice\u2066x", "LEFT-TO-RIGHT ISOLATE"),
        ("alice\u200f", "RIGHT-TO-LEFT MARK"),
        ("alice\u00ad", "SOFT HYPHEN"),
    ],
)
def test_invisible_and_bidi_characters_rejected(value, char_name):
    with pytest.raises(InvalidIdError, match=re.escape(f"({char_name})")):
        validate_id(value)


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("a/b", "contains a path separator"),
        ("/etc", "contains a path separator"),
        ("a\\b", "contains a path separator"),
        ("..", "must start with a letter, a digit or '_'"),
        ("a..b", "contains '..'"),
        ("_..", "contains '..'"),
        ("trailing.", "ends with '.'"),
        (".hidden", "must start with a letter, a digit or '_'"),
        ("-flag", "must start with a letter, a digit or '_'"),
        ("@all", "must start with a letter, a digit or '_'"),
        ("%", "must start with a letter, a digit or '_'"),
        ("*", "must start with a letter, a digit or '_'"),
    ],
)
def test_path_tricks_and_structure_rejected(value, rule):
    with pytest.raises(InvalidIdError, match=re.escape(rule)):
        validate_id(value)


@pytest.mark.parametrize("value", ["a:b", "a'b", 'a"b', "a;b", "a,b", "a#b", "a?b", "a&b", "a<b>", "a|b", "a$b", "a(b)"])
def test_other_punctuation_rejected(value):
    with pytest.raises(InvalidIdError, match="disallowed character"):
        validate_id(value)


def test_non_nfc_rejected_not_normalised():
    decomposed = "zoe\u0308"  # e + combining diaeresis, the NFD spelling of "zoë"
    with pytest.raises(InvalidIdError, match="is not NFC-normalised unicode"):
        validate_id(decomposed)
    assert validate_id("zo\u00eb") == "zo\u00eb"


def test_message_names_the_field():
    with pytest.raises(InvalidIdError, match=r"^invalid user_id 'a/b': contains a path separator$") as err:
        validate_id("a/b", "user_id")
    assert err.value.field == "user_id" and err.value.rule == "contains a path separator"


def test_long_values_are_truncated_in_the_message():
    with pytest.raises(InvalidIdError) as err:
        validate_id("x" * 500)
    assert len(str(err.value)) < 150


def test_memory_identity_applies_the_grammar_to_every_field():
    good = dict(tenant_id="acme", user_id="u1", agent_id="a", session_id="s")
    MemoryIdentity(**good)
    for field, bad in [("tenant_id", "a/b"), ("user_id", ""), ("agent_id", "a b"), ("session_id", ".."), ("workspace_id", "w\u200b")]:
        with pytest.raises(ValueError, match="path separator|must not be empty|disallowed|must start"):
            MemoryIdentity(**{**good, field: bad})
    with pytest.raises(ValueError, match="disallowed"):
        MemoryIdentity(**good, department_ids=["eng", "h r"])
    with pytest.raises(ValueError, match="not a single string"):
        MemoryIdentity(**good, roles="admin")


@given(st.text(max_size=140))
def test_validate_id_returns_input_unchanged_or_raises(value):
    try:
        assert validate_id(value) is value
    except InvalidIdError as exc:
        assert str(exc).startswith("invalid id ")


_ID_CHARS = st.characters(categories=("L", "Nd")) | st.sampled_from(sorted(ALLOWED_PUNCTUATION))


@given(st.text(alphabet=_ID_CHARS, min_size=1, max_size=MAX_ID_LENGTH))
def test_accepted_ids_never_contain_structure_breaking_characters(value):
    try:
        validate_id(value)
    except InvalidIdError:
        return
    assert "/" not in value and "\\" not in value and ".." not in value
    assert not any(ch.isspace() for ch in value)
    assert value[0] not in "-.@%*+=~" and not value.endswith(".")
