"""Mutation testing of the policy modules, on demand (never part of the default test run).

    .venv/bin/python tests/mutation/mutate_policy.py                 # every policy module
    .venv/bin/python tests/mutation/mutate_policy.py --module sharing --list
    .venv/bin/python tests/mutation/mutate_policy.py --module reads --json out.json

One change at a time (flip a comparison, swap and/or, negate a condition, drop a `raise`, drop
an element of a literal tuple/set/list, swap a returned True/False), then the fast in-process
tests chosen for that module (`SELECTION`, tests/bridge plus the local contract suite). A mutant
is *killed* when those tests fail (or time out), *survived* when they all pass. The kill rate per
module is what the policy's tests pin down: a survivor is a rule that can be broken with every
test green.

Speed: the parent imports the bridge and the test dependencies once, then forks a child per
mutant; the child swaps the mutated code into the already-imported functions (`__code__`, and
module-level values wherever they were imported) and runs pytest in-process. Nothing is written
to disk: the source files are never touched.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import json
import os
import signal
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MODULES = {
    "policy": "bridge.policy",
    "reads": "bridge.policy.reads",
    "sharing": "bridge.policy.sharing",
    "roles": "bridge.policy.roles",
    "quotas": "bridge.policy.quotas",
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
    "reads": _CORE + ["tests/bridge/test_find_by_key.py", "tests/migrate/test_portability.py"] + _CONTRACT,
    "sharing": _CORE + ["tests/bridge/test_sharing_state.py"] + _CONTRACT,
    "roles": ["tests/bridge/test_federated_injection.py", "tests/bridge/test_roles_file.py", "tests/bridge/test_roles_router_planner.py",
              "tests/bridge/test_multiagent_demo.py", "tests/bridge/test_policy_rules.py", "contract_tests/test_roles.py"],
    "quotas": ["tests/bridge/test_writes.py", "tests/bridge/test_policy_rules.py", "tests/bridge/test_admin_ops.py", "contract_tests/test_hardening.py"],
}

_FLIP = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.LtE: ast.Gt, ast.Gt: ast.LtE,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


class _Mutator(ast.NodeTransformer):
    """Counts mutation points in source order; changes only the `target`-th (None: count only)."""

    def __init__(self, target: int | None) -> None:
        self.target, self.n, self.done = target, 0, None

    def _hit(self, what: str, node: ast.AST) -> bool:
        here = self.n
        self.n += 1
        if here == self.target:
            self.done = f"line {getattr(node, 'lineno', '?')}: {what}"
            return True
        return False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = [body[0]] + [self.visit(s) for s in body[1:]]  # never mutate a docstring
            node.decorator_list = [self.visit(d) for d in node.decorator_list]
            return node
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return node  # the export list is no rule
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


def _source(module: str) -> tuple[str, Path]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin)
    return path.read_text(encoding="utf-8"), path


def count_mutants(module: str) -> list[str]:
    text, _ = _source(module)
    counter = _Mutator(None)
    counter.visit(ast.parse(text))
    out = []
    for k in range(counter.n):
        m = _Mutator(k)
        m.visit(ast.parse(text))
        out.append(m.done or "?")
    return out


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


@dataclass
class Outcome:
    module: str
    index: int
    what: str
    result: str  # killed / survived / timeout / error
    seconds: float


def run_one(module: str, k: int, tests: list[str], timeout: float) -> Outcome:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: mutate, test, exit with pytest's code
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            what = apply_mutant(module, k)
            import pytest
            args = [*tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
            if any(t.startswith("contract_tests") for t in tests):
                args.append("--adapter=local")
            code = pytest.main(args)
            os._exit(int(code) if what != "?" else 99)
        except BaseException:
            os._exit(98)
    deadline = start + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return Outcome(module, k, "", "timeout", time.monotonic() - start)
        time.sleep(0.05)
    code = os.waitstatus_to_exitcode(status)
    result = {0: "survived", 1: "killed", 5: "error", 98: "error", 99: "error"}.get(code, "killed")
    return Outcome(module, k, "", result, time.monotonic() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--module", action="append", choices=sorted(MODULES), help="policy module(s) to mutate (default: all)")
    parser.add_argument("--list", action="store_true", help="only list the mutants")
    parser.add_argument("--only", type=int, action="append", help="run only these mutant indexes")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant before it counts as killed (a hang)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--tests", action="append", help="run these test paths instead of the module's SELECTION")
    parser.add_argument("--without", action="append", default=[], help="leave these test paths out (a 'before' measurement)")
    parser.add_argument("--sample", type=int, default=1, help="run every Nth mutant only (a quick estimate)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    names = args.module or sorted(MODULES)
    # imported once, before any fork: the children share them
    import bridge.facade  # noqa: F401
    import pytest  # noqa: F401
    for name in names:
        importlib.import_module(MODULES[name])
    outcomes: list[Outcome] = []
    for name in names:
        module = MODULES[name]
        mutants = count_mutants(module)
        tests = [t for t in (args.tests or SELECTION[name]) if (ROOT / t).exists() and t not in args.without]
        if args.list:
            for k, what in enumerate(mutants):
                print(f"{name}#{k}: {what}")
            continue
        for k, what in enumerate(mutants):
            if (args.only and k not in args.only) or k % args.sample:
                continue
            o = run_one(module, k, tests, args.timeout)
            o.what = what
            outcomes.append(o)
            print(f"{name}#{k} {o.result:8} {o.seconds:6.1f}s  {what}", flush=True)
    if args.list:
        return 0
    print("\nkill rate per module (killed + timeout) / (all - error):")
    for name in names:
        mine = [o for o in outcomes if o.module == MODULES[name]]
        valid = [o for o in mine if o.result != "error"]
        killed = [o for o in valid if o.result in ("killed", "timeout")]
        rate = 100.0 * len(killed) / len(valid) if valid else float("nan")
        print(f"  {name:8} {len(killed)}/{len(valid)} = {rate:.1f}%  ({len(mine) - len(valid)} errors)")
        for o in mine:
            if o.result == "survived":
                print(f"    survivor {name}#{o.index}: {o.what}")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
