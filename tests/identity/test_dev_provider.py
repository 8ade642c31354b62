"""Development fallback: the `pi` plugin's env names keep working, defaults match the seed, and
production mode makes the provider impossible to construct."""

from __future__ import annotations

import pytest

from identity.errors import IdentityConfigurationError, Unauthenticated
from identity.providers import BearerToken, DevEnvironment, DevEnvironmentProvider


async def test_defaults_match_the_single_user_plugin():
    identity = await DevEnvironmentProvider({}).authenticate(DevEnvironment())
    assert (identity.tenant_id, identity.user_id, identity.agent_id) == ("local", "user_01", "pi")
    assert identity.workspace_id is None and identity.department_ids == frozenset() and identity.roles == frozenset()
    assert len(identity.session_id) == 32


async def test_plugin_variable_names_are_honoured():
    env = {
        "VIKING_MEMORY_USER_ID": "alice",
        "VIKING_MEMORY_ASSISTANT_ID": "coder",
        "VIKING_MEMORY_GROUP_ID": "alpha",
        "VIKING_BRIDGE_TENANT_ID": "acme",
        "VIKING_BRIDGE_DEPARTMENT_IDS": "eng, 研发部 ,",
        "VIKING_BRIDGE_ROLES": "admin,member",
        "VIKING_BRIDGE_SESSION_ID": "s1",
    }
    identity = await DevEnvironmentProvider(env).authenticate(DevEnvironment())
    assert (identity.tenant_id, identity.user_id, identity.agent_id, identity.workspace_id) == ("acme", "alice", "coder", "alpha")
    assert identity.department_ids == frozenset({"eng", "研发部"})
    assert identity.roles == frozenset({"admin", "member"})
    assert identity.session_id == "s1"


async def test_empty_group_id_as_shipped_by_the_plugin_means_no_workspace():
    identity = await DevEnvironmentProvider({"VIKING_MEMORY_GROUP_ID": ""}).authenticate(DevEnvironment())
    assert identity.workspace_id is None


async def test_identity_is_read_once_and_stable():
    env = {"VIKING_MEMORY_USER_ID": "alice"}
    provider = DevEnvironmentProvider(env)
    env["VIKING_MEMORY_USER_ID"] = "mallory"
    a = await provider.authenticate(DevEnvironment())
    b = await provider.authenticate(DevEnvironment())
    assert a == b and a.user_id == "alice"


@pytest.mark.parametrize("mode", ["production", "PRODUCTION", "prod"])
def test_production_mode_env_refuses_construction(mode):
    with pytest.raises(IdentityConfigurationError) as err:
        DevEnvironmentProvider({"VIKING_BRIDGE_MODE": mode})
    message = str(err.value)
    for advice in ("VIKING_BRIDGE_PROVIDER=jwt", "api_key", "gateway", "disabled in production"):
        assert advice in message


def test_production_mode_from_settings_refuses_even_if_env_says_dev():
    with pytest.raises(IdentityConfigurationError, match="disabled in production"):
        DevEnvironmentProvider({"VIKING_BRIDGE_MODE": "development"}, mode="production")


def test_unknown_mode_is_a_configuration_error():
    with pytest.raises(IdentityConfigurationError, match="'staging' is not a mode"):
        DevEnvironmentProvider({"VIKING_BRIDGE_MODE": "staging"})


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("VIKING_MEMORY_USER_ID", "../etc", "path separator"),
        ("VIKING_BRIDGE_TENANT_ID", "acme corp", "SPACE"),
        ("VIKING_BRIDGE_DEPARTMENT_IDS", "eng,h\u200br", "ZERO WIDTH SPACE"),
        ("VIKING_MEMORY_ASSISTANT_ID", "pi\u202e", "RIGHT-TO-LEFT OVERRIDE"),
    ],
)
def test_invalid_env_value_names_the_variable(name, value, rule):
    with pytest.raises(IdentityConfigurationError, match=f"^{name}: .*{rule}"):
        DevEnvironmentProvider({name: value})


async def test_other_credential_kinds_rejected():
    with pytest.raises(Unauthenticated, match="expected a DevEnvironment credential"):
        await DevEnvironmentProvider({}).authenticate(BearerToken("x"))  # type: ignore[arg-type]
