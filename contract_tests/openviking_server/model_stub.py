"""A tiny OpenAI-compatible model server on loopback, so OpenViking runs fully offline.

It serves exactly two endpoints, deterministically:

- `POST /v1/embeddings`: vectors from `adapters.embedding.HashingEmbedder` (the same vectors the
  local store uses), so the server's ranking is reproducible and needs no model download;
- `POST /v1/chat/completions`: a fixed, deterministic reply for session-commit extraction. The
  reply names one memory per user message that starts with "remember:" (what a real model would
  extract), and otherwise an empty result. Every other prompt gets a short neutral summary.

It never talks to the network and never stores what it is sent. Runs on a daemon thread.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from adapters.embedding import HashingEmbedder

__all__ = ["ModelStub"]

_REMEMBER = re.compile(r"remember:\s*(.+)", re.IGNORECASE)


def _extraction_reply(prompt: str) -> str:
    """A deterministic stand-in for the LLM: facts the user asked to remember, else a summary."""
    facts = [m.group(1).strip().splitlines()[0][:300] for m in _REMEMBER.finditer(prompt)]
    facts = list(dict.fromkeys(f.rstrip('"}],\\n ') for f in facts if f))
    lowered = prompt.lower()
    if facts and ("memor" in lowered or "extract" in lowered):
        items = [
            {"category": "preferences", "memory_type": "preferences", "abstract": f, "overview": f, "content": f,
             "name": f"fact_{i}", "title": f"fact {i}", "reason": "the user asked to remember it"}
            for i, f in enumerate(facts)
        ]
        return json.dumps({"memories": items, "preferences": items, "operations": [], "reasoning": "deterministic stub"})
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
