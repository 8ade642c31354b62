"""Stand up a real OpenViking 0.5.2 server on loopback for tests and benchmarks.

What it does, in order (each step has a deadline and a readable error):

1. `ensure_venv()` — a SEPARATE virtual environment (default
   `~/.cache/viking-bridge/openviking-0.5.2-venv`, override with `VIKING_BRIDGE_OPENVIKING_VENV`)
   with `openviking==0.5.2`; reused when it already works, installed otherwise (~300 packages,
   ~1.3 GB). The project's own environment is never touched.
2. `ModelStub` — an OpenAI-compatible `/v1/embeddings` + `/v1/chat/completions` on a free port.
3. an `ov.conf` in a private temp dir (workspace, root key, embedding/vlm -> the stub).
4. `openviking-server --config ov.conf` on a free loopback port, in its own process group,
   single process; waits for `/ready` and reports the start-up time.
5. `stop()` kills the process group (TERM, then KILL) and removes the temp dir; if the process
   that started the server dies without it (SIGKILL, `os._exit`), `contract_tests/reaper.py`
   kills the group instead, so no server outlives its run.

It never reads `OPENVIKING_*` variables or `~/.openviking`; the child gets a scrubbed
environment with HOME pointed into the temp dir so the server cannot pick up a user's config.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx

from contract_tests.openviking_server.model_stub import ModelStub
from contract_tests.reaper import GroupReaper

__all__ = ["OPENVIKING_VERSION", "VenvUnavailable", "ServerStartError", "default_venv_path", "ensure_venv",
           "venv_status", "OpenVikingServer", "running_server"]

OPENVIKING_VERSION = "0.5.2"
VENV_ENV = "VIKING_BRIDGE_OPENVIKING_VENV"
_READY_MARKER = ".viking-bridge-ready"


class VenvUnavailable(RuntimeError):
    """The OpenViking virtual environment cannot be created or installed here."""


class ServerStartError(RuntimeError):
    """The server did not become ready in time; the message carries its log tail."""


def default_venv_path() -> Path:
    override = os.environ.get(VENV_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "viking-bridge" / f"openviking-{OPENVIKING_VERSION}-venv"


def _server_binary(venv: Path) -> Path:
    return venv / "bin" / "openviking-server"


def _venv_works(venv: Path) -> bool:
    python = venv / "bin" / "python"
    if not (python.exists() and _server_binary(venv).exists()):
        return False
    marker = venv / _READY_MARKER
    if marker.exists() and marker.read_text().strip() == OPENVIKING_VERSION:
        return True
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('openviking'))"],
        capture_output=True, text=True, timeout=120,
    )
    if probe.returncode == 0 and probe.stdout.strip() == OPENVIKING_VERSION:
        marker.write_text(OPENVIKING_VERSION)
        return True
    return False


def venv_status(venv: Path | None = None) -> str | None:
    """None if a working venv is present; else a sentence saying what is missing (no install)."""
    venv = venv or default_venv_path()
    try:
        if _venv_works(venv):
            return None
    except (OSError, subprocess.SubprocessError) as exc:
        return f"OpenViking venv at {venv} is broken: {type(exc).__name__}: {exc}"
    return f"OpenViking {OPENVIKING_VERSION} is not installed in {venv} (it will be installed on first use)"


def ensure_venv(venv: Path | None = None, *, install_timeout: float = 1800.0) -> Path:
    """Return a working venv with openviking==0.5.2, installing it (under a file lock) if needed."""
    venv = venv or default_venv_path()
    if _venv_works(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f".{venv.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing the same venv
        if _venv_works(venv):
            return venv
        log = venv.parent / f"{venv.name}.install.log"
        try:
            if not (venv / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
            with open(log, "w") as out:
                pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
                subprocess.run([*pip, f"openviking=={OPENVIKING_VERSION}"], check=True, stdout=out, stderr=subprocess.STDOUT, timeout=install_timeout)
                if not _venv_works(venv):
                    # An earlier install killed part-way can leave the package's metadata without its
                    # files (the server program above all); pip then calls it satisfied and installs
                    # nothing. Reinstall the package itself; its dependencies are what pip checked.
                    subprocess.run([*pip, "--force-reinstall", "--no-deps", f"openviking=={OPENVIKING_VERSION}"],
                                   check=True, stdout=out, stderr=subprocess.STDOUT, timeout=install_timeout)
        except (OSError, subprocess.SubprocessError) as exc:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise VenvUnavailable(f"could not install openviking=={OPENVIKING_VERSION} into {venv}: {exc}\n{tail}") from exc
        if not _venv_works(venv):
            raise VenvUnavailable(f"openviking=={OPENVIKING_VERSION} installed into {venv} but does not import")
    return venv


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class OpenVikingServer:
    """A running server. `url`, `root_api_key`, `startup_seconds`; `stop()` cleans everything."""

    auth_mode: str = "api_key"  # "api_key" or "trusted"
    dimension: int = 64
    ready_timeout: float = 180.0
    venv: Path | None = None
    url: str = ""
    root_api_key: str = field(default="", repr=False)
    startup_seconds: float = 0.0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _tmp: Path | None = field(default=None, repr=False)
    _stub: ModelStub | None = field(default=None, repr=False)
    _reaper: GroupReaper | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path | None:
        return self._tmp / "server.log" if self._tmp else None

    def log_tail(self, chars: int = 4000) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return "(no log)"
        return path.read_text(errors="replace")[-chars:]

    def start(self) -> "OpenVikingServer":
        venv = ensure_venv(self.venv)
        began = time.perf_counter()
        self._tmp = Path(tempfile.mkdtemp(prefix="openviking-test-"))
        os.chmod(self._tmp, 0o700)
        self._stub = ModelStub(self.dimension).start()
        port = free_port()
        self.root_api_key = secrets.token_urlsafe(32)
        config = {
            "server": {"host": "127.0.0.1", "port": port, "auth_mode": self.auth_mode, "root_api_key": self.root_api_key},
            "storage": {"workspace": str(self._tmp / "workspace")},
            "embedding": {"dense": {"provider": "openai", "model": "local-embed", "api_base": self._stub.base_url,
                                    "api_key": "stub", "dimension": self.dimension}},
            "vlm": {"provider": "openai", "model": "local-chat", "api_base": self._stub.base_url, "api_key": "stub"},
        }
        conf = self._tmp / "ov.conf"
        conf.write_text(json.dumps(config, indent=2))
        os.chmod(conf, 0o600)
        home = self._tmp / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENVIKING", "OPENAI", "VOLC", "ARK_"))}
        env.update({"HOME": str(home), "OPENVIKING_CONFIG_FILE": str(conf), "NO_PROXY": "127.0.0.1,localhost",
                    "no_proxy": "127.0.0.1,localhost", "PYTHONUNBUFFERED": "1"})
        for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env.pop(proxy, None)
        log = open(self._tmp / "server.log", "wb")
        try:
            self._proc = subprocess.Popen(
                [str(_server_binary(venv)), "--config", str(conf)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=self._tmp, env=env, start_new_session=True,
            )
        finally:
            log.close()
        try:  # its own session: a process that dies without `stop()` must not leave it running
            self._reaper = GroupReaper(self._proc.pid)
        except BaseException:
            self.stop()
            raise
        self.url = f"http://127.0.0.1:{port}"
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - began
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer yet"
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.monotonic() < deadline:
                assert self._proc is not None
                if self._proc.poll() is not None:
                    raise ServerStartError(f"openviking-server exited with {self._proc.returncode} before ready;"
                                           f" log tail:\n{self.log_tail()}")
                try:
                    response = client.get(f"{self.url}/ready")
                    if response.status_code == 200:
                        return
                    last = f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                time.sleep(0.25)
        raise ServerStartError(f"openviking-server not ready after {self.ready_timeout:.0f}s ({last}); log tail:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.release()
        if self._stub is not None:
            self._stub.stop()
            self._stub = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> "OpenVikingServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_server(auth_mode: str = "api_key", **kw: object) -> Iterator[OpenVikingServer]:
    server = OpenVikingServer(auth_mode=auth_mode, **kw)  # type: ignore[arg-type]
    server.start()
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":  # `python -m contract_tests.openviking_server.server` — start, time, stop
    mode = sys.argv[1] if len(sys.argv) > 1 else "api_key"
    with running_server(mode) as srv:
        print(json.dumps({"url": srv.url, "auth_mode": mode, "startup_seconds": round(srv.startup_seconds, 2)}))
