"""Mutation testing of the policy modules, on demand (never part of the default test run).

    .venv/bin/python tests/mutation/mutate_policy.py                 # every policy module
    .venv/bin/python tests/mutation/mutate_policy.py --module sharing --list
    .venv/bin/python tests/mutation/mutate_policy.py --module reads --json out.json

One change at a time (flip a comparison, swap and/or, negate a condition, drop a `raise`, drop
an element of a literal tuple/set/list, swap a returned True/False), then the fast in-process
tests: first the pure rule tests (`QUICK`), and for a mutant they miss the module's whole
`SELECTION` (tests/bridge plus the local contract suite). A mutant is *killed* when those tests
fail (or time out), *survived* when they all pass. The kill rate per module is what the policy's
tests pin down: a survivor is a rule that can be broken with every test green. `EQUIVALENT`
lists the few mutants no input can observe, each with why. The latest measurement and the kill
tests by rule family: tests/mutation/README.md.

Speed: the parent imports the bridge, the pytest plugins and the test modules once, then forks
a child per mutant (`--jobs` at a time); the child swaps the mutated code into the
already-imported functions (`__code__`, and module-level values wherever they were imported) and
runs pytest in-process. Nothing is written to disk: the source files are never touched.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import importlib
import json
import os
import signal
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]

MODULES = {
    "policy": "bridge.policy",
    "reads": "bridge.policy.reads",
    "sharing": "bridge.policy.sharing",
    "roles": "bridge.policy.roles",
    "quotas": "bridge.policy.quotas",
    "config": "bridge.policy.config",
    "keys": "bridge.policy.keys",
}

_CORE = [
    "tests/bridge/test_policy.py", "tests/bridge/test_policy_rules.py", "tests/bridge/test_sharing_policy.py",
    "tests/bridge/test_hardening_promotion.py", "tests/bridge/test_hardening_manifests.py", "tests/bridge/test_injected_read_only.py",
    "tests/bridge/test_lifecycle.py", "tests/bridge/test_multiagent.py", "tests/bridge/test_admin_ops.py",
]
_CONTRACT = ["contract_tests/test_sharing.py", "contract_tests/test_lifecycle.py", "contract_tests/test_multiagent.py", "contract_tests/test_hardening.py"]
#: the tests run against each module's mutants (fast, in-process; the local contract suite)
SELECTION = {
    "policy": _CORE + ["tests/bridge/test_hardening_erasure.py", "tests/bridge/test_recall_only_scopes.py", "tests/bridge/test_find_by_key.py"] + _CONTRACT,
    "reads": _CORE + ["tests/bridge/test_find_by_key.py", "tests/bridge/test_history_hides_reads.py", "tests/migrate/test_portability.py"] + _CONTRACT,
    "sharing": _CORE + ["tests/bridge/test_sharing_state.py"] + _CONTRACT,
    "roles": ["tests/bridge/test_federated_injection.py", "tests/bridge/test_roles_file.py", "tests/bridge/test_roles_router_planner.py",
              "tests/bridge/test_multiagent_demo.py", "tests/bridge/test_policy_rules.py", "contract_tests/test_roles.py"],
    "quotas": ["tests/bridge/test_writes.py", "tests/bridge/test_policy_rules.py", "tests/bridge/test_admin_ops.py", "contract_tests/test_hardening.py"],
    "config": _CORE + _CONTRACT,
    "keys": ["tests/bridge/test_console_ops.py", "tests/bridge/test_admin_ops.py"],
}
#: The first stage for every module: the pure rule tests (no store, no door; a few seconds in all).
#: A mutant they do not kill is run again against the module's whole `SELECTION`.
QUICK = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "bridge").glob("test_policy*.py")) + ["tests/bridge/test_sharing_policy.py"]

_FLIP = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


class _Mutator(ast.NodeTransformer):
    """Counts mutation points in source order; changes only the `target`-th (None: count only)."""

    def __init__(self, target: int | None) -> None:
        self.target, self.n, self.done = target, 0, None
        self.seen: list[str] = []  # every mutation point met, described

    def _hit(self, what: str, node: ast.AST) -> bool:
        here = self.n
        self.n += 1
        self.seen.append(f"line {getattr(node, 'lineno', '?')}: {what}")
        if here == self.target:
            self.done = f"line {getattr(node, 'lineno', '?')}: {what}"
            return True
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        # never mutate a docstring, nor an annotation (`list[tuple[ScopeKey, str]]` is no rule:
        # with postponed annotations it is a string nothing evaluates)
        body = node.body
        start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else 0
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        for default in (*node.args.defaults, *node.args.kw_defaults):
            if default is not None:
                self.visit(default)
        node.body = body[:start] + [self.visit(s) for s in body[start:]]
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node  # the export list is no rule
        if any(isinstance(t, ast.Tuple) for t in node.targets) and isinstance(node.value, ast.Tuple):
            node.value.elts = [self.visit(e) for e in node.value.elts]  # `a, b = x, y`: dropping one only fails to unpack
            return node
        return self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if isinstance(node.target, ast.Name) and node.target.id == "__all__":
            return node
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for i, op in enumerate(node.ops):
            flipped = _FLIP.get(type(op))
            if flipped and self._hit(f"{type(op).__name__} -> {flipped.__name__}", node):
                node.ops[i] = flipped()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._hit(f"{type(node.op).__name__} -> {other.__name__}", node):
            node.op = other()
        return node

    def _negate(self, test: ast.expr, node: ast.AST, what: str) -> ast.expr:
        if self._hit(f"negate the condition of {what}", node):
            return test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else ast.UnaryOp(ast.Not(), test)
        return test

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        node.test = self._negate(node.test, node, "if")
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        node.test = self._negate(node.test, node, "a conditional expression")
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.ifs = [self._negate(t, t, "a comprehension filter") for t in node.ifs]
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        if self._hit("drop the raise", node):
            return ast.Pass()
        return self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
            if self._hit(f"return {node.value.value} -> {not node.value.value}", node):
                node.value = ast.Constant(not node.value.value)
        return node

    def _drop(self, node: ast.Tuple | ast.Set | ast.List) -> ast.AST:
        self.generic_visit(node)
        if len(node.elts) >= 2 and all(isinstance(e, (ast.Attribute, ast.Constant, ast.Name)) for e in node.elts):
            for i in range(len(node.elts)):
                if self._hit(f"drop element {ast.unparse(node.elts[i])} of {ast.unparse(node)[:60]}", node):
                    node.elts = node.elts[:i] + node.elts[i + 1:]
                    break
        return node

    def visit_Tuple(self, node: ast.Tuple) -> ast.AST:
        if isinstance(node.ctx, ast.Store):
            return node
        return self._drop(node)

    visit_Set = _drop  # type: ignore[assignment]
    visit_List = _drop  # type: ignore[assignment]


@functools.lru_cache(maxsize=None)
def _source(module: str) -> tuple[str, Path]:
    """The module's text, read once by the parent (the forked children inherit it), so an edit
    to the file during a run cannot shift the mutant numbering under it."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin)
    return path.read_text(encoding="utf-8"), path


def count_mutants(module: str) -> list[str]:
    text, _ = _source(module)
    counter = _Mutator(None)
    counter.visit(ast.parse(text))
    return counter.seen


def _functions(ns: dict, prefix: str = "") -> dict[str, types.FunctionType]:
    out: dict[str, types.FunctionType] = {}
    for name, value in ns.items():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for part in ("fget", "fset"):
                f = getattr(value, part)
                if isinstance(f, types.FunctionType):
                    out[f"{prefix}{name}.{part}"] = f
            continue
        if isinstance(value, types.FunctionType):
            out[prefix + name] = value
        elif isinstance(value, type) and not prefix and value.__module__ == ns.get("__name__"):
            out.update(_functions(dict(vars(value)), prefix=f"{name}."))
    return out


def apply_mutant(module: str, k: int) -> str:
    """Swap mutant `k` into the imported module (in this process only)."""
    text, path = _source(module)
    mutator = _Mutator(k)
    tree = mutator.visit(ast.parse(text))
    ast.fix_missing_locations(tree)
    mod = importlib.import_module(module)
    ns: dict = {"__name__": module, "__file__": str(path), "__package__": mod.__package__}
    if hasattr(mod, "__path__"):
        ns["__path__"] = mod.__path__
    exec(compile(tree, str(path), "exec"), ns)
    old_fns, new_fns = _functions(vars(mod)), _functions(ns)
    for name, fn in old_fns.items():
        new = new_fns.get(name)
        if new is not None and new.__code__ is not fn.__code__:
            fn.__code__ = new.__code__  # every holder of the function object now runs the mutant
            fn.__defaults__ = new.__defaults__
    for name, value in list(ns.items()):  # module-level values (a tuple of scopes...) wherever imported
        if name.startswith("__") or isinstance(value, (types.FunctionType, type, types.ModuleType)):
            continue
        old = vars(mod).get(name, None)
        if old is None or old == value:
            continue
        for other in list(sys.modules.values()):
            d = getattr(other, "__dict__", None)
            if d is None:
                continue
            for attr, held in list(d.items()):
                if held is old:
                    d[attr] = value
    return mutator.done or "?"


#: Equivalent mutants: changes no input can observe, left out of the kill rate. Keyed by module and
#: `signature` (the mutated source line plus the change, so an edit elsewhere keeps the key); each
#: with the reason it is equivalent. Keep this list short and honest: a mutant that a test *could*
#: kill is a missing test, not an entry here.
EQUIVALENT: dict[tuple[str, str], str] = {
    ("reads", "HISTORY_HIDDEN_ACTIONS = frozenset({\"recall\", \"export\"}) :: drop element 'export' of {'recall', 'export'}"):
        "an export's audit row names scopes, never a memory id (bridge/handlers/export.py), and a memory's history "
        "asks the audit for rows of that memory id only: no export row can ever reach the filter",
}


@functools.lru_cache(maxsize=None)
def _lines(module: str) -> list[str]:
    return _source(module)[0].splitlines()


def signature(module: str, what: str) -> str:
    """`what` ("line N: change") as "<the source line, stripped> :: change", stable across edits
    elsewhere in the file."""
    line, _, change = what.partition(": ")
    try:
        src = _lines(MODULES[module])[int(line.removeprefix("line ")) - 1].strip()
    except (ValueError, IndexError):
        src = line
    return f"{src} :: {change}"


@dataclass
class Outcome:
    module: str
    index: int
    what: str
    result: str  # killed / survived / timeout / error / equivalent
    seconds: float
    stage: str = ""  # which selection killed it: "quick" or "full"


def _start(module: str, k: int, tests: list[str]) -> int:
    """Fork a child that swaps in mutant `k` and runs `tests`, exiting with pytest's code."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            what = apply_mutant(module, k) if k >= 0 else "the unmutated code"
            import pytest
            args = [*tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
            if any(t.startswith("contract_tests") for t in tests):
                args.append("--adapter=local")
            code = pytest.main(args)
            os._exit(int(code) if what != "?" else 99)
        except BaseException:
            os._exit(98)
    return pid


def _result(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return {0: "survived", 1: "killed", 5: "error", 98: "error", 99: "error"}.get(code, "killed")


def run_many(
    jobs: list[tuple[str, int, list[str]]], parallel: int, timeout: float, on_done: Callable[[str, int, str, float], None] = lambda *_: None,
) -> dict[tuple[str, int], tuple[str, float]]:
    """Run each (module, mutant, tests) in its own forked child, `parallel` at a time; `on_done`
    hears of each as it ends."""
    pending, running, out = list(jobs), {}, {}
    while pending or running:
        while pending and len(running) < parallel:
            module, k, tests = pending.pop(0)
            running[_start(module, k, tests)] = (module, k, time.monotonic())
        time.sleep(0.05)
        for pid, (module, k, start) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                out[(module, k)] = (_result(status), time.monotonic() - start)
            elif time.monotonic() - start > timeout:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                out[(module, k)] = ("timeout", time.monotonic() - start)
            else:
                continue
            del running[pid]
            on_done(module, k, *out[(module, k)])
    return out


def _preload(tests: list[str]) -> None:
    """Import, in the parent, what every child's pytest run would import again: the pytest plugins
    installed as entry points (hypothesis, schemathesis... seconds of imports each), the conftest
    files and the test modules themselves. A forked child then finds them in `sys.modules` and
    spends its time running tests, not importing them (pytest reuses an imported module)."""
    from importlib.metadata import entry_points
    for ep in entry_points(group="pytest11"):
        try:
            importlib.import_module(ep.module)
        except Exception:  # a plugin that fails to import here fails the same way in pytest
            pass
    for test in tests:
        path = ROOT / test
        parts = path.relative_to(ROOT).with_suffix("").parts
        for depth in range(1, len(parts)):
            if (ROOT.joinpath(*parts[:depth]) / "conftest.py").exists():
                importlib.import_module(".".join(parts[:depth]) + ".conftest")
        if path.suffix == ".py":
            importlib.import_module(".".join(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", choices=sorted(MODULES), help="policy module(s) to mutate (default: all)")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--only", type=int, action="append", help="run only these mutant indexes")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant before it counts as killed (a hang)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--tests", action="append", help="run only these test paths (one stage, instead of QUICK then SELECTION)")
    parser.add_argument("--without", action="append", default=[], help="leave these test paths out (a 'before' measurement)")
    parser.add_argument("--quick-only", action="store_true", help="stop after the QUICK stage (survivors are not re-run against SELECTION)")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="mutants run at the same time (each in its own forked child)")
    parser.add_argument("--sample", type=int, default=1, help="run every Nth mutant only (a quick estimate)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    names = args.module or list(MODULES)
    # imported once, before any fork: the children share them
    import bridge.facade  # noqa: F401
    import pytest  # noqa: F401
    for name in names:
        importlib.import_module(MODULES[name])

    def existing(paths: list[str]) -> list[str]:
        return [t for t in paths if (ROOT / t).exists() and t not in args.without]

    stages = [("given", existing(args.tests))] if args.tests else [("quick", existing(QUICK))]
    if not args.list:
        _preload(sorted({t for _, tests in stages for t in tests} | set() if args.tests or args.quick_only
                        else {t for _, tests in stages for t in tests} | {t for n in names for t in existing(SELECTION[n])}))
    outcomes: list[Outcome] = []
    baseline_ok: set[tuple[str, ...]] = set()
    for name in names:
        module = MODULES[name]
        mutants = count_mutants(module)
        if args.list:
            for k, what in enumerate(mutants):
                note = " [equivalent]" if (name, signature(name, what)) in EQUIVALENT else ""
                print(f"{name}#{k}: {what}{note}")
            continue
        todo: list[Outcome] = []
        for k, what in enumerate(mutants):
            if (args.only and k not in args.only) or k % args.sample:
                continue
            o = Outcome(module, k, what, "survived", 0.0)
            if (name, signature(name, what)) in EQUIVALENT:
                o.result = "equivalent"
            todo.append(o)
        plan = stages if args.tests or args.quick_only else [*stages, ("full", existing(SELECTION[name]))]
        for stage, tests in plan:
            left = [o for o in todo if o.result == "survived"]
            if not left:
                break
            if tuple(tests) not in baseline_ok:  # a red or broken selection would "kill" every mutant
                result, _ = run_many([(module, -1, tests)], 1, args.timeout)[(module, -1)]
                if result != "survived":
                    print(f"the {stage} tests do not pass on the unmutated code ({result}): {' '.join(tests)}", file=sys.stderr)
                    return 2
                baseline_ok.add(tuple(tests))
            by_index = {o.index: o for o in left}

            def done(module: str, k: int, result: str, seconds: float, stage: str = stage) -> None:
                o = by_index[k]
                o.result, o.stage = result, stage
                o.seconds += seconds
                print(f"{name}#{k} {result:8} {stage:5} {seconds:6.1f}s  {o.what}", flush=True)

            run_many([(module, o.index, tests) for o in left], args.jobs, args.timeout, done)
        outcomes += todo
    if args.list:
        return 0
    print("\nkill rate per module (killed + timeout) / (all - error - equivalent):")
    for name in names:
        mine = [o for o in outcomes if o.module == MODULES[name]]
        valid = [o for o in mine if o.result not in ("error", "equivalent")]
        killed = [o for o in valid if o.result in ("killed", "timeout")]
        rate = 100.0 * len(killed) / len(valid) if valid else float("nan")
        errors = sum(o.result == "error" for o in mine)
        equivalent = sum(o.result == "equivalent" for o in mine)
        print(f"  {name:8} {len(killed)}/{len(valid)} = {rate:.1f}%  ({equivalent} equivalent excluded, {errors} errors)")
        for o in mine:
            if o.result in ("survived", "error"):
                print(f"    {o.result} {name}#{o.index}: {o.what}")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
