"""Project-wide pytest set-up.

Hypothesis' per-example deadline is a timing assertion; on a shared 2-core CI machine it turns
scheduler noise into failures, and timing goals belong in `benchmarks/`. So no deadline anywhere.

The contract suite's pytest plugin (`--adapter`, `--contract-examples`, `--contract-seed`) is
opt-in — installing viking-bridge registers no pytest plugin — so this project loads it here.
"""

from hypothesis import settings

settings.register_profile("viking-bridge", deadline=None, print_blob=True)
settings.load_profile("viking-bridge")

pytest_plugins = ["contract_tests.plugin"]
