"""ScopeSets hold one shared object per distinct ScopeKey (adapters/scopes.py, `canonical`): a
recall's hot paths then find keys by identity instead of comparing them field by field. Sharing
an immutable key changes no answer: entries, order, weights and reasons stay as given, and a
table that starts again when full still gives equal keys."""

from __future__ import annotations

import pytest

from adapters import scopes
from adapters.scopes import ScopeEntry, ScopeKey, ScopeSet, canonical


def test_two_sets_built_from_equal_keys_hold_the_same_key_object():
    a = ScopeSet.from_entries([ScopeEntry(ScopeKey.tenant("acme"), 0.5, "tenant"), ScopeEntry(ScopeKey.private("acme", "alice"))])
    b = ScopeSet.of(ScopeKey.private("acme", "alice"), ScopeKey.tenant("acme"))
    assert a.keys[0] is b.keys[1] and a.keys[1] is b.keys[0]
    assert a.get(ScopeKey.tenant("acme")) is a.entries[0]  # an equal copy still finds it


def test_the_entries_keep_everything_but_the_key_object_in_their_order():
    given = [
        ScopeEntry(ScopeKey.workspace("acme", "ws1"), 0.7, "current workspace"),
        ScopeEntry(ScopeKey.agent("acme", "wukong", "alice"), 0.3, "shared", grant_id="g1", memory_ids=frozenset({"m1"})),
    ]
    ScopeSet.of(ScopeKey.workspace("acme", "ws1"))  # the shared object is another one than `given`'s
    built = ScopeSet.from_entries(given)
    assert list(built.entries) == given  # equal field by field, same order
    assert [e.key for e in built] == [e.key for e in given]
    with pytest.raises(Exception, match="twice"):
        ScopeSet.from_entries([given[0], ScopeEntry(ScopeKey.workspace("acme", "ws1"))])


def test_a_full_table_starts_again_and_still_gives_equal_keys(monkeypatch):
    monkeypatch.setattr(scopes, "_CANONICAL", {})
    monkeypatch.setattr(scopes, "_CANONICAL_MAX", 2)
    keys = [canonical(ScopeKey.private("acme", f"u{i}")) for i in range(5)]
    assert keys == [ScopeKey.private("acme", f"u{i}") for i in range(5)]
    assert len(scopes._CANONICAL) <= 2
    assert canonical(ScopeKey.private("acme", "u4")) is keys[4]
