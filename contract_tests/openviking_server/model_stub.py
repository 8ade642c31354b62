"""A tiny OpenAI-compatible model server on loopback, so OpenViking runs fully offline.

It serves exactly two endpoints, deterministically:

- `POST /v1/embeddings`: vectors from `adapters.shared.embedding.HashingEmbedder` (the same vectors the
  local store uses), so the server's ranking is reproducible and needs no model download;
- `POST /v1/chat/completions`: a deterministic reply. To OpenViking 0.5.2's session-commit
  extraction prompt it answers in the format that server parses — a "restricted Python memory
  SDK" program — with one `sdk.create_preferences(...)` per user message that states a
  preference ("prefer", "like", "love") or asks to be remembered ("remember: X" -> X), then
  `sdk.commit()` (just `sdk.commit()` when there is nothing). Every other prompt gets a short
  neutral summary.

It never talks to the network and never stores what it is sent. Runs on a daemon thread.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from adapters.shared.embedding import HashingEmbedder

__all__ = ["ModelStub"]

_REMEMBER = re.compile(r"remember:\s*(.+)", re.IGNORECASE)
# OpenViking 0.5.2 session commit (openviking/session/memory/extract_loop.py) asks for a program
# in its "restricted Python memory SDK" (parsed by extraction_output_protocol/python_protocol.py:
# only assignments and `sdk.<method>(keyword=...)` calls, ending with an optional sdk.commit()).
# The conversation is rendered as `[<index>][<role>][<name>]: <text>` lines under this heading.
_SDK_PROMPT = "restricted Python memory SDK"
_CONVERSATION = "## Conversation History"
_MESSAGE = re.compile(r"^\[(\d+)\]\[(user|assistant|system)\]\[[^\]\n]*\]: ?(.*)$", re.MULTILINE)
_PREFERENCE = re.compile(r"\b(prefer|prefers|preferred|like|likes|love|remember)\b", re.IGNORECASE)


def _triple(text: str) -> str:
    """A triple-quoted literal the server's restricted parser accepts (backslash and quotes escaped)."""
    return '"""' + text.replace("\\", "\\\\").replace('"', '\\"') + '"""'


def _topic(text: str) -> str:
    """Lowercase, underscores, at most three words (the schema's rule for `topic`)."""
    words = [w for w in re.findall(r"[a-z]+", text.lower()) if w not in {"remember", "i", "the", "a", "an", "to", "that", "my", "me"}]
    return "_".join(words[:3]) or "general"


def user_facts(prompt: str) -> list[tuple[int, str]]:
    """(message index, text) of the user messages that state a preference or ask to be remembered.

    Only the conversation section of the prompt is read, so words in the instructions never
    become memories. A `remember: X` message yields X; any other preference message yields itself.
    """
    _, _, conversation = prompt.partition(_CONVERSATION)
    out: list[tuple[int, str]] = []
    for match in _MESSAGE.finditer(conversation):
        index, role, text = int(match.group(1)), match.group(2), match.group(3).strip()
        if role != "user" or not text or not _PREFERENCE.search(text):
            continue
        asked = _REMEMBER.search(text)
        out.append((index, (asked.group(1) if asked else text).strip()[:300]))
    return out


def sdk_program(prompt: str) -> str:
    """The deterministic extraction reply: one `create_preferences` per preference message."""
    lines = []
    for n, (_index, fact) in enumerate(user_facts(prompt)):
        lines.append(f"pref_{n} = sdk.create_preferences(user={_triple('user')}, topic={_triple(_topic(fact))}, "
                     f"content={_triple('- ' + fact)})")
    lines.append("sdk.commit()")
    return "\n".join(lines)


def _extraction_reply(prompt: str) -> str:
    """A deterministic stand-in for the LLM: an SDK program for the extraction prompt, else a summary."""
    if _SDK_PROMPT in prompt and _CONVERSATION in prompt:
        return sdk_program(prompt)
    words = re.findall(r"\w+", prompt)[:40]
    return " ".join(words) or "summary"


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # keep the test output quiet
        return

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "local-embed", "object": "model"}, {"id": "local-chat", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "bad json"}})
            return
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/embeddings"):
            raw = body.get("input", "")
            texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
            vectors = self.server.embedder.embed_sync(texts)
            self.server.calls["embeddings"] += 1
            self._send(200, {
                "object": "list",
                "model": body.get("model", "local-embed"),
                "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            })
        elif path.endswith("/chat/completions"):
            prompt = "\n".join(
                m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
                for m in body.get("messages", [])
            )
            self.server.calls["chat"] += 1
            self._send(200, {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "local-chat"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": _extraction_reply(prompt)}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            })
        else:
            self._send(404, {"error": {"message": f"no route {path}"}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    embedder: HashingEmbedder
    calls: dict[str, int]


class ModelStub:
    """`with ModelStub(dimension=64) as stub: stub.base_url` -> `http://127.0.0.1:<port>/v1`."""

    def __init__(self, dimension: int = 64) -> None:
        self.dimension = dimension
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "ModelStub":
        server = _Server(("127.0.0.1", 0), _Handler)
        server.embedder = HashingEmbedder(self.dimension)
        server.calls = {"embeddings": 0, "chat": 0}
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="openviking-model-stub", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None, "stub not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def calls(self) -> dict[str, int]:
        assert self._server is not None
        return dict(self._server.calls)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "ModelStub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
