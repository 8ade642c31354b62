"""Role files: the phase-7 file loads; every mistake is a RoleFileError naming the file and field."""

from __future__ import annotations

import pytest

from bridge.errors import ConfigurationError, RoleFileError
from bridge.facade import MemoryBridge
from bridge.roles.loader import load_roles, parse_roles
from bridge.assembly.settings import load_bridge_settings
from bridge.doors.cli.demo_multiagent import PHASE7_ROLES


def test_phase7_role_file_states_seed_002s_scopes():
    book = load_roles(PHASE7_ROLES)
    intent, ontology, verifier = (book.role_of(a) for a in ("intent", "ontology", "simulation-verifier"))
    assert (intent.domains, intent.tiers, intent.budget_multiplier) == (("purchasing",), ("hot", "warm"), 0.8)
    assert (set(ontology.domains), ontology.tiers, ontology.budget_multiplier) == ({"code-arch", "purchasing"}, ("hot", "warm"), 1.0)
    assert (verifier.domains, verifier.tiers, verifier.budget_multiplier) == (("purchasing",), ("hot",), 0.6)
    assert book.members("procurement") == {"coordinator", "intent", "ontology", "simulation-verifier", "coder"}
    assert book.teams_of("intent") == {"procurement"} and book.teams_of("nobody") == frozenset()


@pytest.mark.parametrize(("data", "field", "words"), [
    ({"agents": {"a": {"budget_multiplier": -1}}}, "agents.a.budget_multiplier", "greater than 0"),
    ({"agents": {"a": {"tiers": ["lukewarm"]}}}, "agents.a.tiers.0", "'hot', 'warm' or 'cold'"),
    ({"agents": {"a": {"read_layers": ["everything"]}}}, "agents.a.read_layers.0", "private"),
    ({"agents": {"a": {"allowed_kinds": ["gossip"]}}}, "agents.a.allowed_kinds.0", "decision"),
    ({"agents": {"a": {"domains": ["finance"]}}}, "agents.a.domains.0", "no [router.domains.finance] rule"),
    ({"agents": {"a": {"may_inject_into": ["ghost"]}}}, "agents.a.may_inject_into.0", "unknown agent 'ghost'"),
    ({"agents": {"a": {"may_inject_into": ["a"]}}}, "agents.a.may_inject_into.0", "never injects into itself"),
    ({"agents": {"a": {"teams": ["bad team"]}}}, "agents.a.teams", "team id"),
    ({"agents": {"a": {"colour": "red"}}}, "agents.a.colour", "Extra inputs"),
    ({"agents": {"bad agent": {}}}, "agents", "agent id"),
    ({"agents": {}}, "agents", "at least 1"),
    ({"agents": {"a": {}}, "budgets": {"hot": -2}}, "budgets.hot", "greater than or equal to 0"),
    ({"agents": {"a": {}}, "router": {"domains": {"x": {"keywords": []}}}}, "router.domains.x.keywords", "at least 1"),
    ({"agents": {"a": {}}, "version": 2}, "version", "1"),
])
def test_a_bad_role_file_names_the_file_and_the_field(data, field, words):
    with pytest.raises(RoleFileError) as caught:
        parse_roles(data, "/etc/roles.toml")
    err = caught.value
    assert isinstance(err, ConfigurationError)
    assert (err.path, err.field) == ("/etc/roles.toml", field), str(err)
    assert words in str(err) and str(err).startswith("role file /etc/roles.toml: " + field)


def test_unreadable_or_malformed_role_files_are_refused_by_name(tmp_path):
    with pytest.raises(RoleFileError, match="cannot read it"):
        load_roles(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[agents.a\n")
    with pytest.raises(RoleFileError, match=r"bad.toml: not valid TOML"):
        load_roles(bad)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(RoleFileError, match="not UTF-8"):
        load_roles(binary)


def test_roles_file_setting_loads_into_the_bridge_and_fails_at_start_up(tmp_path, monkeypatch):
    monkeypatch.setenv("VIKING_BRIDGE_ROLES_FILE", str(PHASE7_ROLES))
    bridge = MemoryBridge.open_local(tmp_path / "home")
    try:
        assert bridge.runtime.roles is not None and "ontology" in bridge.runtime.roles.agents
    finally:
        import asyncio

        asyncio.run(bridge.aclose())
    broken = tmp_path / "roles.toml"
    broken.write_text('[agents.intent]\nbudget_multiplier = "lots"\n')
    monkeypatch.setenv("VIKING_BRIDGE_ROLES_FILE", str(broken))
    with pytest.raises(RoleFileError, match=r"roles.toml: agents.intent.budget_multiplier"):
        load_bridge_settings().runtime_options()


async def test_role_file_team_membership_is_applied_when_the_bridge_opens(tmp_path):
    from tests.kit import make_identity
    from bridge.errors import NotPermitted

    bridge = MemoryBridge.open_local(tmp_path / "home", roles=load_roles(PHASE7_ROLES))
    try:
        member = make_identity("li", agent="intent", workspace="procurement")
        written = await bridge.remember(member, "团队：阈值 15 天", "decision", memory_type="team", team_id="procurement")
        assert written.scope == "acme/team/procurement"
        with pytest.raises(NotPermitted, match="not a member"):
            await bridge.remember(make_identity("li", agent="freelancer", workspace="procurement"), "x", "decision", memory_type="team", team_id="procurement")
        assert await bridge.state.teams.members("acme", "procurement") == {"coordinator", "intent", "ontology", "simulation-verifier", "coder"}
    finally:
        await bridge.aclose()


def test_team_tenants_must_be_tenant_ids():
    with pytest.raises(RoleFileError, match="team_tenants"):
        parse_roles({"team_tenants": ["not a tenant"], "agents": {"a": {}}}, "t.toml")


def test_a_memory_cannot_be_written_with_a_tier_role_files_do_not_budget() -> None:
    """A tier outside hot/warm/cold would be a memory no role's budget ever routes: refused."""
    from bridge.errors import InvalidInput
    from bridge.operations import Remember, WriteBack

    for bad in ("lukewarm", "HOT", True, None, 1):
        with pytest.raises(InvalidInput, match="tier"):
            Remember(content="Kafka idempotency decision", kind="decision", metadata={"tier": bad})
        with pytest.raises(InvalidInput, match="tier"):
            WriteBack(manifest_id="m" * 16, content="the result", kind="fact", metadata={"tier": bad})
    assert Remember(content="x", kind="fact", metadata={"tier": "cold", "domain": "purchasing"}).metadata["tier"] == "cold"
