"""`--via service`: the contract suite through a real `viking-bridge serve` PROCESS configured by
environment alone, in front of Viking (the simulator over real HTTP, in its own process) and a
real OpenViking server (api_key and trusted modes).

`--via http` already drives every call through the service's ASGI app, but in the test's own
process: it proves the routes and the mapping, not that a deployment made only of `VIKING_BRIDGE_*`
variables works. Here `serve` is a child process whose whole configuration is its environment:
the backend's URL and secret (the simulator's API key, OpenViking's root key, by `..._FILE` as
container secrets are mounted), the shared state's URL, and the gateway secret it verifies. The
test process holds the backend secret only because it also plays the second replica (below);
agents' requests carry identity as gateway-signed headers and nothing else. The request and
response mapping is `HttpBridge`'s (contract_tests/http_transport.py), given a client of the
process instead of the in-process app.

The two hard parts, and how they are solved:

1. Every contract test expects a FRESH, EMPTY backend (fixed tenants "acme", "globex", ... and
   fixed user names, so anything left behind by an earlier test would show). A process started
   once per session cannot be given a new namespace, and resetting the backend and state from
   outside under a running serve does not work: serve keeps caches that are correct in
   production precisely because nothing deletes behind its back — the session binder's confirmed
   (tenant, session) fingerprints, the Viking adapter's registered scopes (it would stop writing
   the registry rows `list_scopes` and erasure read), the OpenViking adapter's known accounts and
   users and its extraction checks. A reset would make them stale and the suite would test the
   reset, not the bridge; a reset endpoint in the service is out of the question (no test
   backdoor in production). So each test gets its own `serve` process ("restart only when
   needed", and every test needs it): a new principal prefix (Viking) or namespace (OpenViking)
   on the server the session shares, a new PostgreSQL database for the state, started before
   the test (during the previous test: `_schedule_spare`) and stopped after it. The cost is
   serve's start-up (measured per test, printed at the end of the run: about 1.4-1.7 s of CPU,
   most of it importing FastAPI, pydantic and the bridge's models; 1.7-2.1 s before the
   processes shared a bytecode cache, `_bytecode_environment`); the servers behind it — the
   simulator process, OpenViking, PostgreSQL — are started once per session.

2. Some tests read the bridge's `state`, `sessions`, `backend` and `policy` directly, or write
   into the backend around the bridge. The test process is therefore a SECOND REPLICA of the
   same deployment: `MemoryBridge.from_settings` over the very environment serve got, with the
   state on the shared PostgreSQL (`VIKING_BRIDGE_STATE_URL`) — the multi-replica set-up the
   product supports, where the Viking write ledger and OpenViking's per-user keys live in that
   database too. What serve wrote, the test reads; what the test plants, serve finds. The
   attributes are the replica's; every call the suite makes goes to the process.

What this transport cannot do: give serve a clock, a policy or a second bridge the test chooses
in-process (`ContractEnv.other_bridge`, the property test's moving clock; such tests are marked
`contract_own_bridge` and skip before a process starts), change its role table while it runs
(a test's `contract_roles` marker becomes the role file it starts with), or patch serve's code to
inject a crash or a lost response (the tests that take `monkeypatch`); those tests are skipped
under `--via service`, with that reason.

After each test, before the process is gone, its /metrics is read, and every response body, its
access log and stderr are searched for the backend secrets (and the state database's
password): one found is a test failure.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Callable
from unittest import mock
from urllib.parse import urlsplit

import httpx

from contract_tests.http_transport import HttpBridge
from contract_tests.openviking_server.server import free_port
from contract_tests.reaper import popen_reaped

__all__ = ["SERVICE_ADAPTERS", "ServiceBridge", "ServiceWorld", "service_world", "startup_seconds", "unavailable_reason"]

#: The adapters this transport can put behind a serve process, and how.
SERVICE_ADAPTERS = ("viking", "openviking", "openviking-trusted")
_OV_MODES = {"openviking": "api_key", "openviking-trusted": "trusted"}

#: serve's start-up time (spawn to /ready) of every test of this run.
startup_seconds: list[float] = []

_sim_lock = threading.Lock()
_simulator: dict[str, object] = {}


def unavailable_reason(adapter: str) -> str | None:
    """Why `adapter` cannot run behind a serve process here (None: it can)."""
    if adapter not in SERVICE_ADAPTERS:
        return f"--via service fronts {', '.join(SERVICE_ADAPTERS)} (a serve process configured by environment); {adapter!r} is not one of them"
    from contract_tests.postgres_server import unavailable_reason as pg_reason

    reason = pg_reason()
    if reason:
        return f"the shared state of serve and the test's replica is PostgreSQL: {reason}"
    if adapter in _OV_MODES:
        from contract_tests.backends.openviking import _unavailable

        return _unavailable(_OV_MODES[adapter])
    return None


def _viking_simulator() -> dict[str, str]:
    """The simulator over real HTTP in its own process, once per test process (stopped at exit)."""
    with _sim_lock:
        if "line" not in _simulator:
            proc = popen_reaped([sys.executable, "-m", "contract_tests.viking_simulator"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError(f"the Viking simulator did not start: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            _simulator.update(line=json.loads(line), proc=proc)
            atexit.register(_stop_process, proc)
        return _simulator["line"]  # type: ignore[return-value]


def _stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _secret_file(folder: Path, name: str, value: str) -> str:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / name
    path.write_text(value + "\n")
    path.chmod(0o600)
    return str(path)


def _backend_environment(adapter: str, home: Path) -> tuple[dict[str, str], list[str]]:
    """(serve's VIKING_BRIDGE_* for the backend, the secrets that must never leave it)."""
    secrets_dir = home / "secrets"
    if adapter == "viking":
        sim = _viking_simulator()
        env = {
            "VIKING_BRIDGE_BACKEND": "viking",
            "VIKING_BRIDGE_VIKING__URL": sim["url"],
            "VIKING_BRIDGE_VIKING__COLLECTION": sim["collection"],
            "VIKING_BRIDGE_VIKING__GLOBAL_COLLECTION": sim["global_collection"],
            "VIKING_BRIDGE_VIKING__API_KEY_FILE": _secret_file(secrets_dir, "viking-api-key", sim["api_key"]),
            "VIKING_BRIDGE_VIKING__PRINCIPAL_PREFIX": "s" + uuid.uuid4().hex[:8],  # this test's own corner of the simulator
        }
        return env, [sim["api_key"]]
    from contract_tests.backends.openviking import shared_server

    mode = _OV_MODES[adapter]
    url, root = shared_server(mode)
    env = {
        "VIKING_BRIDGE_BACKEND": "openviking",
        "VIKING_BRIDGE_OPENVIKING__URL": url,
        "VIKING_BRIDGE_OPENVIKING__MODE": mode,
        "VIKING_BRIDGE_OPENVIKING__ROOT_API_KEY_FILE": _secret_file(secrets_dir, "openviking-root-key", root),
        "VIKING_BRIDGE_OPENVIKING__NAMESPACE": "sv" + uuid.uuid4().hex[:10],  # this test's own accounts on the shared server
    }
    hidden = [root]
    if mode == "api_key":  # with shared state the per-user keys live on PostgreSQL, encrypted
        from cryptography.fernet import Fernet

        fernet = Fernet.generate_key().decode()
        env["VIKING_BRIDGE_OPENVIKING__KEY_STORE_SECRET_FILE"] = _secret_file(secrets_dir, "openviking-key-store-secret", fernet)
        hidden.append(fernet)
    return env, hidden


@dataclass
class ServeProcess:
    """One `viking-bridge serve` child: its URL, logs and the environment it was given."""

    url: str
    process: subprocess.Popen
    log_path: Path
    err_path: Path
    env: dict[str, str] = field(repr=False)
    startup_s: float = 0.0

    def stop(self) -> int:
        _stop_process(self.process)
        return self.process.returncode


_bytecode: dict[str, str] = {}


def _bytecode_environment() -> dict[str, str]:
    """Where serve processes may keep compiled bytecode, when the test process was told not to
    write any (`PYTHONDONTWRITEBYTECODE`, as some CI images and sandboxes set).

    Without it every serve process compiles the project's ~160 modules from source again, about
    a fifth of its start-up CPU. An installed deployment never pays that (pip compiles the
    wheel's modules), so the test pays a cost production does not have. The cache is one
    temporary directory per test process (`PYTHONPYCACHEPREFIX`): the source tree and the
    virtualenv stay untouched, the first serve process fills it, the others only read it, and it
    is removed at exit. Nothing but bytecode is shared: each test still gets a fresh process."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return {}
    with _sim_lock:
        if "prefix" not in _bytecode:
            _bytecode["prefix"] = tempfile.mkdtemp(prefix="vb-serve-pyc-")
            atexit.register(shutil.rmtree, _bytecode["prefix"], True)
    return {"PYTHONPYCACHEPREFIX": _bytecode["prefix"]}


def spawn_serve(home: Path, env: dict[str, str], *, ready_timeout: float = 180.0) -> ServeProcess:
    """Start serve with exactly `env` as its VIKING_BRIDGE_* configuration (any inherited one is
    dropped) and wait for /ready."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("VIKING_BRIDGE_", "PROMETHEUS_", "OPENVIKING_"))}
    cache = _bytecode_environment()
    if cache:
        inherited.pop("PYTHONDONTWRITEBYTECODE", None)
    full = {**inherited, **cache, **env}
    log_path, err_path = home / "serve-access.log", home / "serve.err"
    began = time.perf_counter()
    with open(log_path, "wb") as out, open(err_path, "wb") as err:
        process = popen_reaped([sys.executable, "-m", "bridge.doors.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                               env=full, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    serve = ServeProcess(f"http://127.0.0.1:{port}", process, log_path, err_path, env)
    deadline = time.monotonic() + ready_timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited with {process.returncode} before it was ready: {err_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(serve.url + "/ready", timeout=2.0).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            serve.stop()
            raise RuntimeError(f"serve was not ready after {ready_timeout:.0f} s: {err_path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)
    serve.startup_s = time.perf_counter() - began
    startup_seconds.append(serve.startup_s)
    return serve


class ServiceBridge(HttpBridge):
    """`HttpBridge` over a real serve process; keeps every response text for the secret search."""

    def __init__(self, replica: object, url: str, secret: str) -> None:
        client = httpx.AsyncClient(base_url=url, timeout=120, trust_env=False)
        super().__init__(replica, client=client, secret=secret)  # type: ignore[arg-type]
        self.transcript: list[str] = []

    def _received(self, response: httpx.Response) -> None:
        self.transcript.append(f"{response.request.method} {response.request.url.path} -> {response.status_code}\n{dict(response.headers)}\n{response.text}")


@dataclass
class ServiceWorld:
    """One test's deployment: the serve process, the test's replica of it, and the bridge the
    suite calls (`ServiceBridge`: calls go to the process, attributes are the replica's)."""

    serve: ServeProcess
    bridge: ServiceBridge
    secrets: list[str]

    @property
    def backend(self) -> object:
        return self.bridge.inner.backend


def _contract_policy_environment() -> dict[str, str]:
    from contract_tests.harness import CONTRACT_GLOBAL_WRITERS

    return {"VIKING_BRIDGE_GLOBAL_WRITER_TENANTS": ",".join(sorted(CONTRACT_GLOBAL_WRITERS))}


def _replica(env: dict[str, str]) -> object:
    """The test process's own replica of the deployment: the same settings, read from the same
    environment serve got (the process's own VIKING_BRIDGE_* set aside while they are read)."""
    from bridge.assembly.settings import load_bridge_settings
    from bridge.facade import MemoryBridge

    clean = {k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}
    with mock.patch.dict(os.environ, {**clean, **env}, clear=True):
        settings = load_bridge_settings()
    return MemoryBridge.from_settings(settings)


@dataclass
class _Deployment:
    """What a test's deployment is made of before the test takes it: a serve process over a new
    state database and backend namespace, and the secrets that must never leave it."""

    home: Path
    env: dict[str, str]
    hidden: list[str]
    db: object
    serve: ServeProcess
    gateway_secret: str


def _deploy(adapter: str, home: Path, roles_toml: str | None) -> _Deployment:
    """A new state database and backend namespace, and a serve process over them (serve migrates
    the state itself, as the first replica of a deployment does)."""
    from contract_tests.postgres_server import shared_server

    home.mkdir(parents=True, exist_ok=True)
    backend_env, hidden = _backend_environment(adapter, home)
    db = shared_server().create_database()
    gateway_secret = secrets.token_hex(32)
    password = urlsplit(db.app_url).password or ""
    env = {
        **backend_env,
        **_contract_policy_environment(),
        "VIKING_BRIDGE_HOME": str(home / "serve-home"),
        "VIKING_BRIDGE_STATE_URL": db.app_url,
        "VIKING_BRIDGE_STATE_MIGRATE_URL": db.owner_url,
        "VIKING_BRIDGE_EMBEDDER": "hashing",
        "VIKING_BRIDGE_SERVICE_PROVIDERS": "gateway",
        "VIKING_BRIDGE_GATEWAY__SECRET": gateway_secret,
        "VIKING_BRIDGE_SERVICE_RATE_BURST": "0",
        "VIKING_BRIDGE_SERVICE_MAX_BODY_BYTES": str(16 * 1_048_576),
        "VIKING_BRIDGE_SERVICE_SHUTDOWN_GRACE_SECONDS": "5",
    }
    if roles_toml is not None:
        roles_path = home / "roles.toml"
        roles_path.write_text(roles_toml, encoding="utf-8")
        env["VIKING_BRIDGE_ROLES_FILE"] = str(roles_path)
    try:
        serve = spawn_serve(home, env)
    except BaseException:
        shared_server().drop_database(db)
        raise
    return _Deployment(home, env, [*hidden, *([password] if len(password) >= 8 else [])], db, serve, gateway_secret)


# The NEXT test's deployment, started while the current test runs: serve's start-up is CPU in
# one process while a test mostly waits on another, so on two cores it costs the run little wall
# time. It is a deployment like any other — its own database, namespace, secrets and process —
# only started earlier; a test with a role file of its own gets a deployment made for it.
_spares: dict[str, concurrent.futures.Future[_Deployment]] = {}
_spare_pool: list[concurrent.futures.ThreadPoolExecutor] = []


def _schedule_spare(adapter: str) -> None:
    with _sim_lock:
        if adapter in _spares:
            return
        if not _spare_pool:
            _spare_pool.append(concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="vb-spare-serve"))
            atexit.register(_discard_spares)
        _spares[adapter] = _spare_pool[0].submit(_deploy, adapter, Path(tempfile.mkdtemp(prefix="vb-serve-")), None)


def _take_spare(adapter: str) -> _Deployment | None:
    with _sim_lock:
        future = _spares.pop(adapter, None)
    return None if future is None else future.result()  # a spare that failed to start fails this test, with its error


def _discard_spares() -> None:
    """At exit: the last spare was never used; stop it and drop its database."""
    from contract_tests.postgres_server import shared_server

    for adapter in list(_spares):
        future = _spares.pop(adapter)
        try:
            spare = future.result(timeout=300)
        except Exception:  # noqa: BLE001 - nothing to clean up from a spare that did not start
            continue
        spare.serve.stop()
        shared_server().drop_database(spare.db)  # type: ignore[arg-type]
        shutil.rmtree(spare.home, ignore_errors=True)


@contextlib.asynccontextmanager
async def service_world(adapter: str, home: Path, *, roles_toml: str | None = None) -> AsyncIterator[ServiceWorld]:
    """A fresh deployment for one test: a new state database and backend namespace, a serve
    process over them and the test's replica; everything removed afterwards, and the process's
    output searched for secrets before it goes. `roles_toml`: the role file the deployment
    starts with (`VIKING_BRIDGE_ROLES_FILE`; a test's `contract_roles` marker). The deployment
    may have been started during the previous test (`_schedule_spare`); the next one is started
    now."""
    from contract_tests.postgres_server import shared_server

    deployment = (_take_spare(adapter) if roles_toml is None else None) or _deploy(adapter, home, roles_toml)
    _schedule_spare(adapter)
    serve, env = deployment.serve, deployment.env
    replica = None
    try:
        replica = _replica(env)  # the test's replica: the state is migrated already, by serve
        world = ServiceWorld(serve, ServiceBridge(replica, serve.url, deployment.gateway_secret), deployment.hidden)
        try:
            yield world
            world.bridge.transcript.append(httpx.get(serve.url + "/metrics", timeout=10).text)
        finally:
            await world.bridge._client.aclose()
            serve.stop()
        _assert_no_secret(world)
    finally:
        if serve.process.poll() is None:
            serve.stop()
        if replica is not None:
            try:
                drop: Callable[[], object] | None = getattr(replica.backend, "drop_namespace", None)  # type: ignore[attr-defined]
                if drop is not None and adapter != "viking":  # the simulator's rows die with it; OpenViking's accounts are deleted
                    await drop()  # type: ignore[misc]
            finally:
                await replica.aclose()  # type: ignore[attr-defined]
        shared_server().drop_database(deployment.db)  # type: ignore[arg-type]
        if deployment.home != home:  # a spare's own directory (the test's home is pytest's to remove)
            shutil.rmtree(deployment.home, ignore_errors=True)


def _assert_no_secret(world: ServiceWorld) -> None:
    places = {
        "responses and /metrics": "\n".join(world.bridge.transcript),
        "access log": world.serve.log_path.read_text(errors="replace"),
        "stderr": world.serve.err_path.read_text(errors="replace"),
    }
    for secret in world.secrets:
        for where, text in places.items():
            if secret in text:
                raise AssertionError(f"a backend or state secret appears in serve's {where}")


def startup_summary() -> str | None:
    if not startup_seconds:
        return None
    s = sorted(startup_seconds)
    return (f"serve start-up (spawn to /ready) over {len(s)} processes: median {statistics.median(s):.2f} s, "
            f"min {s[0]:.2f} s, max {s[-1]:.2f} s, total {sum(s):.1f} s")
