"""ScopeKey -> Viking principal and session ids are injective and inside the service alphabet."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scopes import ScopeKey, Visibility
from adapters.viking.mapping import VIKING_ID, backend_session_id, memory_id_for, principal_for, registry_principal
from identity.ids import is_valid_id

SESSION_ALPHABET = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")

_chars = st.sampled_from(list("abcXYZ019_-.@%*+=~") + ["é", "研", "发", "ß", "Ω", "٣"])
ids = st.text(_chars, min_size=1, max_size=24).filter(is_valid_id)


@st.composite
def scope_keys(draw: st.DrawFn) -> ScopeKey:
    v = draw(st.sampled_from(list(Visibility)))
    if v is Visibility.GLOBAL:
        return ScopeKey.global_()
    t = draw(ids)
    if v is Visibility.TENANT:
        return ScopeKey.tenant(t)
    if v is Visibility.AGENT:
        return ScopeKey.agent(t, draw(ids), draw(ids))
    if v is Visibility.TASK:
        return ScopeKey.task(t, draw(ids), draw(ids), draw(ids))
    return ScopeKey(v, t, draw(ids))


@settings(max_examples=400)
@given(a=scope_keys(), b=scope_keys())
def test_distinct_scopes_get_distinct_principals(a: ScopeKey, b: ScopeKey) -> None:
    pa, pb = principal_for(a), principal_for(b)
    assert VIKING_ID.match(pa) and VIKING_ID.match(pb)
    assert (pa == pb) == (a == b)


@settings(max_examples=200)
@given(scopes=st.lists(scope_keys(), min_size=2, max_size=40, unique=True))
def test_principals_of_many_scopes_never_collide(scopes: list[ScopeKey]) -> None:
    assert len({principal_for(s) for s in scopes}) == len(scopes)
    assert not {principal_for(s) for s in scopes} & {registry_principal(s.tenant_id) for s in scopes}


def test_classic_escaping_traps_stay_apart() -> None:
    names = ["john_doe", "john-doe", "johndoe", "john.doe", "john%doe", "john*doe", "foo", "foobar", "foo@bar", "Foo"]
    principals = {principal_for(ScopeKey.private("acme", n)) for n in names}
    assert len(principals) == len(names)
    # the same owner id in two tenants, or as a workspace vs a department, is not the same place
    assert principal_for(ScopeKey.workspace("acme", "x")) != principal_for(ScopeKey.department("acme", "x"))
    assert principal_for(ScopeKey.private("acme", "u")) != principal_for(ScopeKey.private("acme2", "u"))
    assert principal_for(ScopeKey.agent("acme", "a", "u_1")) != principal_for(ScopeKey.agent("acme", "a_u", "1"))


def test_principal_prefix_namespaces_live_runs() -> None:
    s = ScopeKey.private("acme", "u1")
    assert principal_for(s, "ct0123").startswith("ct0123u_")
    assert principal_for(s, "ct0123") != principal_for(s, "ct0124")


@settings(max_examples=300)
@given(a=scope_keys(), b=scope_keys(), ka=st.text(min_size=1, max_size=200), kb=st.text(min_size=1, max_size=200))
def test_backend_session_ids_are_in_alphabet_and_injective(a: ScopeKey, b: ScopeKey, ka: str, kb: str) -> None:
    sa, sb = backend_session_id(a, ka), backend_session_id(b, kb)
    assert SESSION_ALPHABET.match(sa) and len(sa) <= 128
    assert (sa == sb) == (a == b and ka == kb)


def test_two_identities_same_client_session_get_different_backend_sessions() -> None:
    scope = ScopeKey.workspace("acme", "alpha")
    # the bridge's session_key = f(identity fingerprint, client session id)
    alice = backend_session_id(scope, "fp-alice:chat-1")
    bob = backend_session_id(scope, "fp-bob:chat-1")
    assert alice != bob
    assert backend_session_id(scope, "fp-alice:chat-1") == alice  # replay stays its own session


def test_memory_ids_are_deterministic_per_scope_and_key() -> None:
    a, b = ScopeKey.private("acme", "u1"), ScopeKey.private("acme", "u2")
    assert memory_id_for(a, "k") == memory_id_for(a, "k")
    assert memory_id_for(a, "k") != memory_id_for(b, "k")
    assert memory_id_for(a, "k") != memory_id_for(a, "k2")
    assert VIKING_ID.match(memory_id_for(a, "k"))
