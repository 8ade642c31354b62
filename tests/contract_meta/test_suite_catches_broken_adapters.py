"""Proof the contract suite can fail: run it against deliberately broken adapters and check each
one is reported by the tests of the guarantee it breaks (and the real local adapter is not)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# broken adapter -> tests that MUST fail for it (each names the guarantee it breaks)
EXPECTED = {
    "broken-no-scope-filter": {
        "test_1_user_a_private_profile_invisible_to_user_b",
        "test_2_department_a_shared_memory_invisible_to_department_b",
        "test_3_workspace_a_coding_decisions_not_in_workspace_b_default_recall",
        "test_4_agent_internal_tool_experience_not_in_user_facing_assistant",
        "test_agent_private_memory_invisible_to_other_agent_of_same_user_in_every_search_mode",
        "test_heavily_filtered_search_returns_k_permitted_rows",
        "test_random_worlds_never_leak",
    },
    "broken-post-filter-top-k": {"test_heavily_filtered_search_returns_k_permitted_rows"},
    "broken-trusts-metadata-user-id": {
        "test_identity_keys_in_content_metadata_or_update_never_move_a_record",
        "test_7_forged_ids_and_roles_in_prompt_do_not_change_filter_or_write_scope",
    },
    "broken-empty-set-is-all": {"test_empty_scope_set_never_searches_everything"},
    "broken-stale-cache-after-delete": {"test_nothing_recallable_after_forget", "test_nothing_recallable_after_forget_subject"},
}
# Known failures of the real local adapter (none since 440816b made a forged empty ScopeSet raise).
LOCAL_KNOWN: set[str] = set()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """{adapter: {test name: failure message}} for one run over every broken adapter of the tests
    that must catch them (the rest of the suite asserts nothing here, and the real local adapter
    runs all of it in the main session already); local runs the same tests as the control."""
    xml = tmp_path_factory.mktemp("meta") / "report.xml"
    catching = " or ".join(sorted(set().union(*EXPECTED.values())))
    args = [sys.executable, "-m", "pytest", "--pyargs", "contract_tests", "-p", "tests.contract_meta.broken_adapters", "-p", "no:cacheprovider",
            "-q", "--tb=short", "--contract-examples", "10", f"--junitxml={xml}", "-k", catching, "--adapter", "local"]
    for name in EXPECTED:
        args += ["--adapter", name]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("VIKING_BRIDGE_CONTRACT_SEED", None)
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert xml.exists(), f"the suite did not run:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result: dict[str, dict[str, str]] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name", "")
        test, _, adapter = name.partition("[")
        adapter = adapter.rstrip("]")
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        result.setdefault(adapter, {})
        if failure is not None:
            result[adapter][test] = (failure.get("message") or "") + "\n" + (failure.text or "")
    return result


@pytest.mark.parametrize("adapter", sorted(EXPECTED))
def test_each_broken_adapter_is_reported_by_the_guarantee_it_breaks(outcomes: dict[str, dict[str, str]], adapter: str) -> None:
    failed = outcomes.get(adapter, {})
    missing = EXPECTED[adapter] - set(failed)
    assert not missing, f"{adapter}: the suite did not report {sorted(missing)}; it failed only {sorted(failed)}"
    named = [t for t in EXPECTED[adapter] if "GUARANTEE BROKEN" in failed[t]]
    assert named, f"{adapter}: no failure message names the guarantee: {[failed[t][:300] for t in EXPECTED[adapter]]}"


def test_the_real_local_adapter_passes(outcomes: dict[str, dict[str, str]]) -> None:
    unexpected = set(outcomes.get("local", {})) - LOCAL_KNOWN
    assert not unexpected, f"the real local adapter failed {sorted(unexpected)}: {[outcomes['local'][t][:500] for t in unexpected]}"
