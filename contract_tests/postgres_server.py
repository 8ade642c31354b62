"""A REAL PostgreSQL 16 + pgvector for the test suites, started by the tests themselves.

Why: the PostgreSQL backend's second wall is row-level security inside the database, and the
shared state's guarantees are transactions and advisory locks; a mock proves none of that. So
the suites run against a real server, on a fresh machine with nothing but Python and PyPI:

- Binaries: `VIKING_BRIDGE_TEST_POSTGRES_BIN` (a directory holding `initdb` and `postgres`), else
  the ones the `pgserver` wheel ships (PostgreSQL 16 with the pgvector extension), else the
  system's (`pg_config --bindir`).
- Root: PostgreSQL refuses to run as root, and CI runs as root. Then `initdb` and `postgres` run
  as the unprivileged `nobody` user (`subprocess` `user=`/`group=`, supplementary groups
  dropped: a setuid before exec, no `su`/`runuser` needed), in a data directory made for it
  (0700, owned by nobody) inside a fresh temporary directory. Nothing on the machine is
  chmod-ed and no user is added (pgserver's own root path does both); the binaries only need to
  be world-readable and executable, as pip installs them — checked, with a reason if not.
- One server per test process: `shared_server()` starts it on first use (initdb + start, a few
  seconds) and stops it at exit. A test of a deployment spread over two servers asks for
  `second_server()`: another, independent server (its own data directory, port and passwords),
  also shared per process and started only when first asked for (never in live mode: the tests
  then start no server of their own). A started server can be taken down and brought back on the
  same port with its data (`take_down()` / `bring_back()`): an outage, for the tests. The postmaster also gets PR_SET_PDEATHSIG, so a test run that
  is killed never leaves a server behind. It listens on 127.0.0.1 only, on a free port, with
  scram-sha-256 passwords (random, per run); fsync is off (test data is thrown away).
- Live mode: `VIKING_BRIDGE_TEST_POSTGRES_URL=postgresql://...` uses an existing server instead.
  Its role needs CREATEDB and CREATEROLE (and pgvector installed in `template1`, or the right to
  create it there): every test works in databases it creates and drops.
- `VIKING_BRIDGE_TEST_POSTGRES_SHARED_BUFFERS` (default 64MB: the tests' data is small) sizes the
  started server's cache, e.g. 1GB for `benchmarks/filtered_recall.py`.

Each test that needs isolation asks for `create_database()`: a new database owned by the
owner role `vb_test_owner`, reachable by the runtime role `vb_test_app` (LOGIN, NOSUPERUSER,
NOBYPASSRLS, not the owner) — the split a deployment makes (docs/deploying.md).

What it must never do: run anything as root inside PostgreSQL's reach, listen beyond loopback,
or touch a database it did not create.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from identity.errors import ConfigurationError, StorageUnavailable

__all__ = ["PostgresForTests", "TestDatabase", "shared_server", "second_server", "second_unavailable_reason", "unavailable_reason",
           "OWNER_ROLE", "APP_ROLE"]

OWNER_ROLE = "vb_test_owner"
APP_ROLE = "vb_test_app"
URL_ENV = "VIKING_BRIDGE_TEST_POSTGRES_URL"
BIN_ENV = "VIKING_BRIDGE_TEST_POSTGRES_BIN"


@dataclass(frozen=True)
class TestDatabase:
    """One throw-away database: `owner_url` runs migrations, `app_url` is the runtime role."""

    __test__ = False  # not a pytest test class

    name: str
    owner_url: str
    app_url: str
    admin_url: str


def _with_credentials(url: str, user: str, password: str, database: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, "/" + quote(database, safe=""), parts.query, ""))


def _find_bindir() -> Path | None:
    explicit = os.environ.get(BIN_ENV)
    if explicit:
        return Path(explicit)
    # the pgserver wheel ships PostgreSQL 16 + pgvector; found without importing it (its import
    # touches per-user runtime directories we do not need)
    spec = importlib.util.find_spec("pgserver")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        bindir = Path(location) / "pginstall" / "bin"
        if (bindir / "postgres").exists():
            return bindir
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False).stdout.strip()
        if out and (Path(out) / "postgres").exists():
            return Path(out)
    return None


def unavailable_reason() -> str | None:
    """None when a PostgreSQL can be had here (live URL, or binaries to start one); else why not."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        return f"the PostgreSQL driver is not installed ({exc}); pip install -e '.[test]'"
    if os.environ.get(URL_ENV):
        return None
    bindir = _find_bindir()
    if bindir is None:
        return f"no PostgreSQL binaries: install the test extra (pgserver), set {BIN_ENV}, or set {URL_ENV}"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("nobody")
        except KeyError:
            return "running as root, and there is no `nobody` user to run PostgreSQL as (it refuses root)"
    return None


def _usable_by_others(bindir: Path) -> bool:
    """Can an unprivileged user reach and run these binaries (every ancestor traversable)?"""
    for directory in [bindir, *bindir.parents]:
        if not os.stat(directory).st_mode & 0o001:
            return False
    return all(os.stat(bindir / exe).st_mode & 0o005 == 0o005 for exe in ("initdb", "postgres"))


def _copy_for_others(bindir: Path, into: Path) -> Path:
    """bin/, lib/ and share/ copied (layout kept: the binaries find the rest relative to themselves)
    to a directory `nobody` can use — for a checkout under a private home such as /root."""
    root = bindir.parent
    target = into / root.parent.name / root.name  # pgserver/pginstall: its RPATH is $ORIGIN/../../../pgserver.libs
    for part in ("bin", "lib", "share"):
        if (root / part).exists():
            shutil.copytree(root / part, target / part, symlinks=True)
    wheel_libs = root.parent.parent / f"{root.parent.name}.libs"  # auditwheel's bundled shared libraries
    if wheel_libs.is_dir():
        shutil.copytree(wheel_libs, into / wheel_libs.name, symlinks=True)
    for directory, _, files in os.walk(into):
        os.chmod(directory, 0o755)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444 | (0o111 if os.stat(path).st_mode & 0o100 else 0))
    return target / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """preexec_fn (after the setuid): the postmaster gets SIGQUIT if the test process dies."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class PostgresForTests:
    """A server for this test process (started here, or a live one by URL) and its databases."""

    def __init__(self, live_url: str | None = None) -> None:
        """`live_url`: use that server (default: $VIKING_BRIDGE_TEST_POSTGRES_URL); else start one."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: Path | None = None
        self._lock = threading.Lock()
        self._created: set[str] = set()
        self._command: tuple[list[str], dict[str, object], Path] | None = None  # how to start it again
        live = live_url if live_url is not None else os.environ.get(URL_ENV)
        self.live = bool(live)
        self.admin_url = live if live else self._start()
        self._owner_password = secrets.token_hex(16)
        self._app_password = secrets.token_hex(16)
        self._prepare_roles()

    # -- server lifecycle ---------------------------------------------------------------
    def _start(self) -> str:
        reason = unavailable_reason()
        if reason:
            raise ConfigurationError(reason)
        bindir = _find_bindir()
        assert bindir is not None
        self._tmp = Path(tempfile.mkdtemp(prefix="vb-postgres-"))
        password = secrets.token_hex(16)
        run_as: dict[str, object] = {}
        run = self._tmp / "run"  # the server's own directory: data and password file
        run.mkdir(mode=0o700)
        if os.geteuid() == 0:  # PostgreSQL refuses root: run it as nobody, in a directory nobody owns
            import pwd

            user = pwd.getpwnam("nobody")
            os.chmod(self._tmp, 0o711)  # nobody may pass through (to run/ and a copy of the binaries), not list
            if not _usable_by_others(bindir):
                bindir = _copy_for_others(bindir, self._tmp / "pg")
            os.chown(run, user.pw_uid, user.pw_gid)
            run_as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        pwfile, data = run / "pw", run / "data"
        pwfile.write_text(password + "\n")
        if run_as:
            os.chown(pwfile, run_as["user"], run_as["group"])  # type: ignore[arg-type]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
        subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--pwfile", str(pwfile), "--auth=scram-sha-256",
             "--encoding=UTF8", "--no-instructions", "--no-sync"],
            check=True, capture_output=True, cwd=data.parent, env=env, **run_as,  # type: ignore[arg-type]
        )
        port = _free_port()
        command = [str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                   "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                   "-c", "max_connections=300",
                   "-c", f"shared_buffers={os.environ.get('VIKING_BRIDGE_TEST_POSTGRES_SHARED_BUFFERS', '64MB')}"]
        self._command = (command, {"cwd": data.parent, "env": env, **run_as}, self._tmp / "server.log")
        self._proc = self._spawn()
        atexit.register(self.stop)
        url = f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres"
        self._wait_ready(url)
        return url

    def _spawn(self) -> subprocess.Popen[bytes]:
        assert self._command is not None
        command, options, log_path = self._command
        log = open(log_path, "ab")  # noqa: SIM115 - kept open for the server's life
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent, **options)  # type: ignore[call-overload]

    def take_down(self) -> None:
        """An outage: the server stops (fast shutdown: connections are cut), its data is kept.
        Only for a server these tests started (a live one is not theirs to stop)."""
        if self.live or self._command is None:
            raise ConfigurationError("only a server the tests started can be taken down")
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)

    def bring_back(self) -> None:
        """The end of the outage: the same server (data, port, roles) accepts connections again."""
        if self.live or self._command is None:
            raise ConfigurationError("only a server the tests started can be brought back")
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            self._proc = self._spawn()
        self._wait_ready(self.admin_url)

    def _wait_ready(self, url: str, timeout: float = 60.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise StorageUnavailable(f"PostgreSQL exited at start-up: {self.log_tail()}")
            try:
                psycopg.connect(url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise StorageUnavailable(f"PostgreSQL did not accept connections within {timeout}s: {self.log_tail()}") from None
                time.sleep(0.1)

    def log_tail(self, chars: int = 2000) -> str:
        if self._tmp is None or not (self._tmp / "server.log").exists():
            return ""
        return (self._tmp / "server.log").read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- roles and databases ------------------------------------------------------------
    def _admin(self, dbname: str | None = None):  # type: ignore[no-untyped-def]
        import psycopg

        url = self.admin_url if dbname is None else _with_credentials(self.admin_url, *self._admin_credentials(), dbname)
        return psycopg.connect(url, autocommit=True)

    def _admin_credentials(self) -> tuple[str, str]:
        parts = urlsplit(self.admin_url)
        from urllib.parse import unquote

        return unquote(parts.username or ""), unquote(parts.password or "")

    def _prepare_roles(self) -> None:
        with self._admin() as conn:
            for role, password, extra in ((OWNER_ROLE, self._owner_password, ""), (APP_ROLE, self._app_password, " NOINHERIT")):
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
                verb = "ALTER" if exists else "CREATE"
                conn.execute(
                    f'{verb} ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE{extra} PASSWORD %s'.replace("%s", "'" + password + "'")
                )
            with self._admin("template1") as tpl:
                tpl.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def create_database(self) -> TestDatabase:
        """A fresh database (pgvector installed) owned by the owner role; the app role may connect."""
        name = "vbt_" + secrets.token_hex(6)
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" OWNER "{OWNER_ROLE}" TEMPLATE template1')
            conn.execute(f'REVOKE ALL ON DATABASE "{name}" FROM PUBLIC')
            conn.execute(f'GRANT CONNECT ON DATABASE "{name}" TO "{APP_ROLE}"')
        with self._lock:
            self._created.add(name)
        return TestDatabase(
            name=name,
            owner_url=_with_credentials(self.admin_url, OWNER_ROLE, self._owner_password, name),
            app_url=_with_credentials(self.admin_url, APP_ROLE, self._app_password, name),
            admin_url=_with_credentials(self.admin_url, *self._admin_credentials(), name),
        )

    def drop_database(self, db: TestDatabase | str) -> None:
        name = db.name if isinstance(db, TestDatabase) else db
        with self._lock:
            if name not in self._created:
                raise ConfigurationError(f"refusing to drop database {name!r}: these tests did not create it")
            self._created.discard(name)
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_SHARED: PostgresForTests | None = None
_SHARED_LOCK = threading.Lock()


def shared_server() -> PostgresForTests:
    """The one server of this test process (started on first use, stopped at exit)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = PostgresForTests()
        return _SHARED


_SECOND: PostgresForTests | None = None


def second_unavailable_reason() -> str | None:
    """None when a second, independent server can be started here; else why not. Not in live
    mode (VIKING_BRIDGE_TEST_POSTGRES_URL): the tests then start no server of their own, and an
    outage cannot be staged on a server someone else runs."""
    if os.environ.get(URL_ENV):
        return f"{URL_ENV} names a live server: these tests start no second server beside it, nor stage its outage"
    return unavailable_reason()


def second_server() -> PostgresForTests:
    """A second server, independent of `shared_server()` (its own process, data, port and
    passwords): for tests of a deployment spread over two servers. Started on first use, shared
    by this test process, stopped at exit."""
    global _SECOND
    with _SHARED_LOCK:
        if _SECOND is None:
            reason = second_unavailable_reason()
            if reason:
                raise ConfigurationError(reason)
            _SECOND = PostgresForTests(live_url="")  # "": start one (never the first server's live URL)
        return _SECOND


def main() -> None:
    """`python -m contract_tests.postgres_server`: start a throw-away server, print its admin URL,
    serve until interrupted (for benchmarks and manual poking; the same as the tests use)."""
    server = PostgresForTests()
    print(server.admin_url, flush=True)
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()


if __name__ == "__main__":
    main()
