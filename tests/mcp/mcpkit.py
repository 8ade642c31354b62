"""Test kit of the MCP server: host configs from examples/mcp/, a real `viking-bridge mcp` process.

`load_host_config(name, **vars)` reads an `mcpServers` file exactly as a host (Claude Code's
`.mcp.json`) does, expanding `${VAR}` from `vars`, so the README's snippet is what the tests run.
`stdio_params(server)` turns its stdio entry into the SDK's `StdioServerParameters` (the
`viking-bridge` command resolved to this interpreter's console script); `spawn_mcp_http(tmp)`
starts `viking-bridge mcp --transport http` on a free loopback port with an RSA-signed JWT issuer
and an API key store, waits for /ready with the service kit's `wait_until_ready`, and returns the
service kit's `Service` handle (tokens, keys, stop by pid).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract_tests.reaper import popen_reaped
from identity.providers.api_keys import ApiKeyStore
from tests.service.servicekit import AUDIENCE, ISSUER, Service, free_port, wait_until_ready

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "mcp"
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("viking-bridge"))


def load_host_config(name: str, **variables: str) -> dict[str, Any]:
    """The `viking-bridge` entry of examples/mcp/NAME, `${VAR}` expanded (an unknown one fails)."""
    raw = (EXAMPLES / name).read_text(encoding="utf-8")

    def expand(match: re.Match[str]) -> str:
        return json.dumps(variables[match.group(1)])[1:-1]

    return json.loads(re.sub(r"\$\{([A-Z0-9_]+)\}", expand, raw))["mcpServers"]["viking-bridge"]


def stdio_params(entry: dict[str, Any], **extra_env: str) -> Any:
    from mcp.client.stdio import StdioServerParameters

    command = CONSOLE_SCRIPT if entry["command"] == "viking-bridge" else entry["command"]
    return StdioServerParameters(command=command, args=list(entry["args"]), env={**entry["env"], **extra_env}, cwd=str(ROOT))


def base_env() -> dict[str, str]:
    """The parent's environment without any VIKING_BRIDGE_* setting (a test states each one)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("VIKING_BRIDGE_", "PROMETHEUS_"))}


def spawn_mcp_http(tmp: Path, *, ready_timeout: float = 60.0, env: dict[str, str] | None = None) -> Service:
    tmp.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    port = free_port()
    env = {
        **base_env(),
        "VIKING_BRIDGE_HOME": str(tmp / "home"),
        "VIKING_BRIDGE_PROVIDER": "jwt",
        "VIKING_BRIDGE_JWT__ISSUER": ISSUER,
        "VIKING_BRIDGE_JWT__AUDIENCE": AUDIENCE,
        "VIKING_BRIDGE_JWT__PUBLIC_KEY_PEM": pem,
        **(env or {}),
    }
    keys = ApiKeyStore(tmp / "keys.sqlite3")
    log_path, err_path = tmp / "mcp.out", tmp / "mcp.err"
    with open(log_path, "wb") as out, open(err_path, "wb") as err:
        process = popen_reaped([CONSOLE_SCRIPT, "mcp", "--transport", "http", "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    handle = Service(f"http://127.0.0.1:{port}", tmp / "home", process, keys, "", key, log_path, err_path)
    try:
        wait_until_ready(handle.url, process, err_path, ready_timeout)
    except RuntimeError:
        handle.stop()
        raise
    return handle
