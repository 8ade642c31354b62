"""Look-alike and invisible ids are refused, checked against the Unicode
TR39 confusables data rather than a hand-made list. The rule is documented in `identity.ids`."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import confusable_homoglyphs
import pytest
from confusable_homoglyphs import categories

from identity.errors import InvalidInput
from identity.ids import InvalidIdError, validate_id
from identity.scripts import COMMON_SCRIPTS, script_of

CONFUSABLES: dict[str, list[dict[str, str]]] = json.loads(
    (Path(confusable_homoglyphs.__file__).parent / "confusables.json").read_text()
)

LATIN_IDS = ["alice", "admin", "root", "john_doe", "acme", "support-bot", "u17", "globex", "paypal", "x9y8z7", "ops.team"]


def _substitutions(ident: str):
    for pos, original in enumerate(ident):
        for homoglyph in CONFUSABLES.get(original, []):
            ch = homoglyph["c"]
            if len(ch) == 1 and ch != original:
                yield ident[:pos] + ch + ident[pos + 1 :], ch


def _refused(value: str) -> bool:
    try:
        validate_id(value)
    except InvalidIdError:
        return True
    return False


def test_no_cross_script_lookalike_of_a_latin_id_is_a_valid_id():
    tested = 0
    accepted = []
    for ident in LATIN_IDS:
        for candidate, ch in _substitutions(ident):
            if script_of(ch) in COMMON_SCRIPTS | {"LATIN"}:
                continue
            tested += 1
            if not _refused(candidate) and unicodedata.normalize("NFKC", candidate) == candidate:
                accepted.append((candidate, script_of(ch), unicodedata.name(ch, "?")))
    assert tested > 300  # the data really was consulted
    assert accepted == []


def test_no_non_ascii_lookalike_of_a_latin_id_is_a_valid_id():
    """Stronger: same-script (Latin `ɑ`, small capitals) and Common look-alikes too — only the
    ASCII-for-ASCII ones (`1`/`l`/`I`) remain, and those are not a unicode problem."""
    accepted = set()
    for ident in LATIN_IDS:
        for candidate, ch in _substitutions(ident):
            if not _refused(candidate):
                accepted.add(ch)
    assert accepted <= set("1lIO0")


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("\u0430lice", "mixes scripts"),  # Cyrillic а
        ("r\u03bfot", "mixes scripts"),  # Greek ο
        ("user\u0661\u0662", "mixes scripts"),  # Arabic-Indic digits in a Latin id
        ("研发\u0430", "mixes scripts"),  # Han + Cyrillic
        ("\u0430\u03b1", "mixes scripts"),  # Cyrillic + Greek
        ("\uff41\uff44\uff4d\uff49\uff4e", "not NFKC-stable"),  # fullwidth ａｄｍｉｎ
        ("\U0001d41a\U0001d41d\U0001d426\U0001d422\U0001d427", "not NFKC-stable"),  # math bold
        ("\ufb01le", "not NFKC-stable"),  # ﬁ ligature
        ("\u017fhell", "not NFKC-stable"),  # long s
        ("\u3164", "invisible character U+3164"),  # Hangul filler alone
        ("a\u3164b", "invisible character U+3164"),
        ("\u115f", "invisible character U+115F"),
        ("\u1160x", "invisible character U+1160"),
        ("x\uffa0", "invisible character U+FFA0"),
        ("\u03c517", "looks like the ASCII id 'u17'"),  # Greek υ, single-script
        ("\u0441\u043e\u0440", "looks like the ASCII id 'cop'"),  # Cyrillic сор
        ("\u0251dmin", "looks like the ASCII id 'admin'"),  # Latin alpha
    ],
)
def test_lookalike_or_invisible_id_cannot_be_used(value, rule):
    with pytest.raises(InvalidIdError, match=re.escape(rule)):
        validate_id(value)


@pytest.mark.parametrize(
    "value",
    ["研发部", "ws研发部", "AI研究所", "ユーザーA", "zoë", "john_doe", "Ünïcödé", "ユーザー1", "東京タワー", "山田たろう", "김철수", "金哲洙", "Сергей", "αγγελος", "ㄅㄆ注音"],
)
def test_real_names_in_one_writing_system_stay_valid(value):
    assert validate_id(value) == value


def test_invalid_id_error_is_typed_invalid_input():
    with pytest.raises(InvalidInput) as err:
        validate_id("a/b")
    assert isinstance(err.value, InvalidIdError) and isinstance(err.value, ValueError)


def test_generated_script_table_matches_the_unicode_data():
    """`identity/_script_data.py` must agree with Scripts.txt for every letter and digit."""
    mismatches = []
    for code in range(0x110000):
        ch = chr(code)
        category = unicodedata.category(ch)
        if not (category.startswith("L") or category == "Nd"):
            continue
        expected = categories.alias(ch)
        if expected != "Unknown" and script_of(ch) != expected:
            mismatches.append((hex(code), expected, script_of(ch)))
    assert mismatches == []
