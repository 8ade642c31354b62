"""The TypeScript client as someone outside this repository gets it: a copy of the package's
tracked files (what a fresh clone holds) imports with `npm install <path>` and no build, the
committed build is exactly what the sources compile to, and `check-generated` works in a copy
that has no ../../docs/openapi.json (the spec is given with --spec)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clients.nodekit import PACKAGE, ensure_node, npm_ci

ROOT = PACKAGE.parents[1]


@pytest.fixture(scope="module")
def npm() -> str:
    found, how = ensure_node()
    if found is None:
        pytest.skip(how)
    return found


def _fresh_copy(dest: Path) -> Path:
    """The package's files as a clone has them: tracked (or new and not ignored), nothing built locally."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "."], cwd=PACKAGE,
                            capture_output=True, text=True, check=True).stdout.split()
    for rel in listed:
        if (PACKAGE / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PACKAGE / rel, dest / rel)
    return dest


def test_a_fresh_copy_imports_with_npm_install_and_no_build(npm: str, tmp_path: Path) -> None:
    package = _fresh_copy(tmp_path / "client")
    assert not (package / "node_modules").exists() and (package / "dist/src/index.js").is_file()
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text(json.dumps({"name": "app", "private": True, "type": "module"}), encoding="utf-8")
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--offline", str(package)], cwd=app, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    probe = ('import("@viking-bridge/client").then((m) => { if (typeof m.VikingBridgeClient !== "function" || typeof m.NotFoundError !== "function") process.exit(3);'
             ' const c = new m.VikingBridgeClient({ baseUrl: "http://127.0.0.1:9", apiKey: "vbk_0123456789abcdef_x" }); console.log(typeof c.recall); })')
    ran = subprocess.run(["node", "--input-type=module", "-e", probe], cwd=app, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == "function", (ran.returncode, ran.stdout, ran.stderr[-2000:])


def test_the_committed_build_is_what_the_sources_compile_to(npm: str, tmp_path: Path) -> None:
    npm_ci(npm)
    out = tmp_path / "out"
    done = subprocess.run(["node", str(PACKAGE / "node_modules/typescript/bin/tsc"), "-p", str(PACKAGE / "tsconfig.build.json"), "--outDir", str(out)],
                          cwd=PACKAGE, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    built = {p.relative_to(out / "src"): p.read_bytes() for p in (out / "src").rglob("*") if p.is_file()}
    committed = {p.relative_to(PACKAGE / "dist/src"): p.read_bytes() for p in (PACKAGE / "dist/src").rglob("*") if p.is_file()}
    assert built.keys() == committed.keys(), sorted(map(str, built.keys() ^ committed.keys()))
    stale = sorted(str(k) for k in built if built[k] != committed[k])
    assert not stale, f"dist/src is stale (run `npm run build:package` in clients/typescript and commit it): {stale}"


def test_check_generated_in_a_copy_outside_the_repository(npm: str, tmp_path: Path) -> None:
    npm_ci(npm)
    package = _fresh_copy(tmp_path / "client")
    (package / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["node", "scripts/generate.mjs", "--check", *args], cwd=package, capture_output=True, text=True, timeout=300)

    unnamed = check()
    assert unnamed.returncode == 2 and "--spec" in unnamed.stderr, (unnamed.returncode, unnamed.stderr)
    given = check("--spec", str(ROOT / "docs" / "openapi.json"))
    assert given.returncode == 0, given.stderr
    spec = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    spec["paths"]["/api/v1/doc-test-only"] = {"get": {"operationId": "docTestOnly", "responses": {"200": {"description": "ok"}}}}
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(spec), encoding="utf-8")
    stale = check(f"--spec={changed}")
    assert stale.returncode == 1 and "stale:" in stale.stderr, (stale.returncode, stale.stderr)
