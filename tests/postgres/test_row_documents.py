"""A stored row's JSON documents parse exactly as `json.loads` parses them (adapters/postgres/documents.py).

The fast path must never accept what `json.loads` refuses (a row that does not decode is
dropped and alarmed, never returned half-read), nor refuse what it accepts."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from adapters.postgres.documents import document

ACCEPTED = ['{"a": 1}', '{}', '[]', '{"author_user_id": "u1", "derived_from": ["m1"], "grant_id": null}', ' {"a": 1}', '{"a": 1}\n',
            '\t[1, 2] ', '"text"', '3.5', 'null', '{"é": "\\u00e9"}']
REFUSED = ['', ' ', '{"a": 1} x', '{"a": 1}{"b": 2}', '{"a": 1', '\ufeff{"a": 1}', 'nul', '{"a": NaN}x', "{'a': 1}"]


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepts_what_json_loads_accepts_with_the_same_value(text: str) -> None:
    assert document(text) == json.loads(text)


@pytest.mark.parametrize("text", REFUSED)
def test_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        document(text)


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4), max_leaves=12)


@given(_json_values, st.sampled_from(["", " ", "\n"]), st.sampled_from(["", " ", "x", "]", "\n"]))
def test_same_outcome_as_json_loads(value: object, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            document(text)
        return
    assert document(text) == expected
