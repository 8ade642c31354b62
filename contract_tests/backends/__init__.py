"""Built-in adapter factories for the contract suite; importing a module registers it.

Each built-in lives in its own module. A module that is missing or cannot be imported (its
client library is not installed, its harness is broken) does not break the suite: its adapters
are registered as *unavailable* with the import error as the reason, so every test for them is
reported as skipped — never silently left out.
"""

from __future__ import annotations

import importlib

from contract_tests.registry import register_unavailable

# module -> the adapter names it registers (used only when the module cannot be imported)
BUILT_IN_MODULES: dict[str, tuple[str, ...]] = {
    "local": ("local",),
    "viking": ("viking",),
    "openviking": ("openviking", "openviking-trusted"),
}

IMPORT_ERRORS: dict[str, str] = {}


def load_builtin_adapters() -> dict[str, str]:
    """Import every built-in factory module; returns {module: error} for those that failed."""
    for module, names in BUILT_IN_MODULES.items():
        if module in IMPORT_ERRORS:
            continue
        try:
            importlib.import_module(f"{__name__}.{module}")
        except Exception as exc:  # ImportError, a SyntaxError in a half-written file, ...
            reason = f"contract_tests.backends.{module} could not be imported: {type(exc).__name__}: {exc}"
            IMPORT_ERRORS[module] = reason
            for name in names:
                register_unavailable(name, reason)
    return dict(IMPORT_ERRORS)
