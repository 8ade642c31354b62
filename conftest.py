"""Project-wide pytest set-up.

Hypothesis' per-example deadline is a timing assertion; on a shared 2-core CI machine it turns
scheduler noise into failures, and timing goals belong in `benchmarks/`. So no deadline anywhere.

The contract suite's pytest plugin (`--adapter`, `--contract-examples`, `--contract-seed`) is
opt-in — installing viking-bridge registers no pytest plugin — so this project loads it here.
"""

from importlib.metadata import entry_points

from hypothesis import settings

settings.register_profile("viking-bridge", deadline=None, print_blob=True)
settings.load_profile("viking-bridge")

# An install made before the plugin became opt-in still carries a `pytest11` entry point for it;
# pytest has then loaded it already and registering it a second time would abort the session.
# tests/contract_meta/test_plugin_is_opt_in.py fails in such a venv: reinstall (pip install -e .).
_STALE_ENTRY_POINT = any(ep.value == "contract_tests.plugin" for ep in entry_points(group="pytest11"))
pytest_plugins = [] if _STALE_ENTRY_POINT else ["contract_tests.plugin"]
