"""The documentation-test kit: find the fenced code blocks of README.md and docs/*.md and run them.

A doc that shows a command or a program promises it works; this kit keeps that promise honest.
Every fenced block declares its language (an untagged fence is refused, so a shell block cannot
hide as "text"). Blocks tagged `bash`, `sh`, `shell`, `console`, `python` or `py` run; every
other language (`text`, `json`, `toml`, `ts`, `sql`, ...) is shown, not run.

How a block runs is decided by an optional directive, an HTML comment on the line before the
fence (invisible on GitHub):

    <!-- doc-test: skip REASON -->          not run; the test reports the skip with REASON
    <!-- doc-test: imports-only REASON -->  python: only its import lines run (REASON: why not the rest)
    <!-- doc-test: excerpt PATH -->         not run here: every line of it must appear, in order, in
                                            PATH (a file the suite runs elsewhere)
    <!-- doc-test: context NAME -->         python fragment: runs after the prelude NAME (PRELUDES
                                            below), inside an async function, so `await` works
    <!-- doc-test: continues -->            shell: runs in the same shell as the file's previous
                                            shell block (its variables, its running server)
    <!-- doc-test: settings -->             shell: a list of VAR=value lines; the variables are
                                            exported and both settings loaders must accept them

Without a directive a python block is a whole program run in a fresh interpreter, and a shell
block a bash script (`set -euo pipefail`). Both start in an empty temporary directory with
`VIKING_BRIDGE_HOME` and `VIKING_BRIDGE_API_KEYS__DB_PATH` inside it, no other `VIKING_BRIDGE_*`
variable, and this interpreter's venv first on PATH (so `viking-bridge` and `python` are the
project's). In shell blocks `curl` fails on an HTTP error (`--fail-with-body`), and
`viking-bridge serve` starts the real service in the background on a free port — the one
substitution: `localhost:8080` / `127.0.0.1:8080` in the block mean that port — waits for
`/ready`, and is stopped when the block's shell exits.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE_SHELL = {"bash", "sh", "shell", "console"}
RUNNABLE_PYTHON = {"python", "py"}
DIRECTIVES = {"skip", "imports-only", "excerpt", "context", "continues", "settings"}

_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(\S+)\s*(.*?)\s*-->\s*$")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    directive: str | None
    argument: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE_SHELL | RUNNABLE_PYTHON

    @property
    def is_shell(self) -> bool:
        return self.lang in RUNNABLE_SHELL


def blocks(path: Path) -> list[Block]:
    """Every fenced block of `path`, dedented (a block inside a list item is indented)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not re.match(rf"^{re.escape(indent)}```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: a fenced block is never closed")
        directive, argument = None, ""
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0 and (d := _DIRECTIVE.match(lines[k])):
            directive, argument = d.group(1), d.group(2)
        text = textwrap.dedent("\n".join(lines[i + 1 : j])) + "\n"
        found.append(Block(path, i + 1, lang, text, directive, argument))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [b for p in documents() for b in blocks(p)]


# ------------------------------------------------------------------------------ environment
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIKING_BRIDGE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["VIKING_BRIDGE_HOME"] = str(tmp / "home")
    env["VIKING_BRIDGE_API_KEYS__DB_PATH"] = str(tmp / "keys.sqlite3")
    env["PYTHONPATH"] = str(ROOT)
    env.pop("VIRTUAL_ENV", None)
    return env


def run(argv: list[str], tmp: Path, *, timeout: float = 180.0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `argv` in its own process group, so whatever it started in the background (a
    server) is stopped with it even when it times out."""
    process = subprocess.Popen(argv, cwd=tmp, env=env or environment(tmp), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = ""
        process.kill()
        process.communicate()
        out += f"\n[doc-test: timed out after {timeout} s]"
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    return subprocess.CompletedProcess(argv, process.returncode, out, "")


# ------------------------------------------------------------------------------ shell
SHELL_PRELUDE = r"""
set -euo pipefail
__doc_pids=()
__doc_stop() { for p in "${__doc_pids[@]:-}"; do if [ -n "$p" ]; then kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; fi; done; }
trap '__doc_rc=$?; __doc_stop; exit $__doc_rc' EXIT
curl() { command curl --silent --show-error --fail-with-body "$@"; echo; }
viking-bridge() {
  if [ "${1:-}" = serve ]; then
    shift
    command viking-bridge serve --port "$DOCTEST_PORT" "$@" >>"$DOCTEST_TMP/serve.log" 2>&1 &
    local pid=$!
    __doc_pids+=("$pid")
    for _ in $(seq 900); do
      if command curl -fs -o /dev/null "http://127.0.0.1:$DOCTEST_PORT/ready"; then return 0; fi
      if ! kill -0 "$pid" 2>/dev/null; then echo "viking-bridge serve exited:"; cat "$DOCTEST_TMP/serve.log"; return 1; fi
      sleep 0.1
    done
    echo "viking-bridge serve never became ready:"; cat "$DOCTEST_TMP/serve.log"; return 1
  fi
  command viking-bridge "$@"
}
"""


def shell_script(group: list[Block]) -> str:
    parts = [SHELL_PRELUDE]
    for block in group:
        text = block.text
        if block.lang == "console":  # `$ cmd` lines run; everything else is shown output
            text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ ")) + "\n"
        text = re.sub(r"\b(?:localhost|127\.0\.0\.1):8080\b", "127.0.0.1:$DOCTEST_PORT", text)
        if block.directive == "settings":
            text = "set -a\n" + text + "set +a\npython -c " + _quote(SETTINGS_CHECK) + "\n"
        parts.append(f"echo '--- {block.name}'\n{text}")
    return "\n".join(parts)


SETTINGS_CHECK = """
from identity.settings import build_provider, load_settings
from bridge.assembly.settings import load_bridge_settings
settings = load_settings()
build_provider(settings)
load_bridge_settings()
print("settings accepted:", settings.provider)
"""


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def run_shell(group: list[Block], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = environment(tmp)
    env["DOCTEST_PORT"], env["DOCTEST_TMP"] = str(free_port()), str(tmp)
    script = tmp / "block.sh"
    script.write_text(shell_script(group), encoding="utf-8")
    return run(["bash", str(script)], tmp, env=env)


# ------------------------------------------------------------------------------ python
# Preludes for fragments: the names a passage of prose has already introduced. Identities are
# hand-built here (as tests/kit.py does) because the fragment is about the bridge, not the
# credential flow; the README's full program shows the credential flow.
PRELUDES: dict[str, str] = {
    "langgraph": '''
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict
from bridge import MemoryBridge
from identity import MemoryIdentity
from identity.providers.jwks import StaticKeys, VerificationKey
from identity.providers.jwt import JwtProvider

class _State(TypedDict):
    note: str

bridge = MemoryBridge.open_local("home")
identity = MemoryIdentity(tenant_id="acme", user_id="alice", agent_id="assistant", department_ids=frozenset({"eng"}),
                          workspace_id="alpha", roles=frozenset(), session_id="s-alice-assistant")
_pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
jwt_provider = JwtProvider(keys=StaticKeys([VerificationKey.from_pem(_pem)]), issuer="https://idp.example", audience="viking-bridge")
url = "http://127.0.0.1:8080"
builder = StateGraph(_State)
builder.add_node("noop", lambda state: state)
builder.add_edge(START, "noop")
''',
    "agents": '''
from bridge import MemoryBridge
from bridge.errors import NotPermitted
from identity import MemoryIdentity
from identity.providers import GatewayProvider
from identity.providers.base import GatewayRequest
from identity.providers.gateway import sign_gateway_headers

def _identity(agent, user="alice", roles=()):
    return MemoryIdentity(tenant_id="acme", user_id=user, agent_id=agent, department_ids=frozenset({"eng"}),
                          workspace_id="alpha", roles=frozenset(roles), session_id=f"s-{user}-{agent}")

bridge = MemoryBridge.open_local("home")
wukong, bajie, tangseng = _identity("wukong"), _identity("bajie"), _identity("tangseng")
admin = _identity("console", user="root", roles=("admin",))
SECRET = "0123456789abcdef" * 4
gateway = GatewayProvider(SECRET)
river_request = GatewayRequest("POST", "/api/v1/remember", sign_gateway_headers(
    SECRET, method="POST", path="/api/v1/remember", tenant_id="acme", user_id="alice", agent_id="coder",
    workspace_id="alpha", task_id="river"))
''',
}


def python_program(block: Block) -> str:
    if block.directive == "imports-only":
        return "\n".join(line for line in _logical_lines(block.text) if re.match(r"\s*(import|from)\s", line)) + "\n"
    if block.directive == "context":
        prelude = PRELUDES[block.argument]
        return (
            "import asyncio\n" + prelude + "\nasync def __doc_main():\n"
            + textwrap.indent(block.text, "    ")
            + "    await bridge.aclose()\n\nasyncio.run(__doc_main())\n"
        )
    return block.text


def _logical_lines(text: str) -> list[str]:
    """Lines joined across open parentheses, so a multi-line import stays whole."""
    out, pending, depth = [], "", 0
    for line in text.splitlines():
        pending = f"{pending}\n{line}" if pending else line
        depth += line.count("(") - line.count(")")
        if depth <= 0:
            out.append(pending)
            pending, depth = "", 0
    return out


def run_python(programs: list[tuple[str, str]], tmp: Path) -> subprocess.CompletedProcess[str]:
    """Run each (name, program) in turn in ONE fresh interpreter, each in its own namespace and
    its own empty working directory, printing a JSON line per program (one interpreter start and
    one model load for all of them; the blocks are independent of each other)."""
    runner = tmp / "blocks.py"
    runner.write_text(
        "import json, os, traceback\n"
        f"programs = {programs!r}\n"
        "for n, (name, source) in enumerate(programs):\n"
        "    os.makedirs(f'block-{n}', exist_ok=True)\n"
        "    os.chdir(f'block-{n}')\n"
        "    try:\n"
        "        exec(compile(source, name, 'exec'), {'__name__': '__main__'})\n"
        "        print(json.dumps({'block': name, 'ok': True}))\n"
        "    except BaseException:\n"
        "        print(json.dumps({'block': name, 'ok': False, 'error': traceback.format_exc()}))\n"
        "    os.chdir('..')\n",
        encoding="utf-8",
    )
    return run([sys.executable, str(runner)], tmp)


def results(output: str) -> dict[str, dict]:
    found = {}
    for line in output.splitlines():
        if line.startswith('{"block"'):
            row = json.loads(line)
            found[row["block"]] = row
    return found


def excerpt_missing(block: Block) -> list[str]:
    """The lines of `block` that do not appear, in order, in the file it claims to excerpt."""
    source = (ROOT / block.argument).read_text(encoding="utf-8").splitlines()
    wanted = [line.strip() for line in block.text.splitlines() if line.strip()]
    missing, at = [], 0
    stripped = [line.strip() for line in source]
    for line in wanted:
        try:
            at = stripped.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing
