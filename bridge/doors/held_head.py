"""`HeldHeadTransport`: a response's head goes out in one write with its body.

Why (measured with benchmarks/service_profile.py and py-spy on the served process): uvicorn writes
a response in two `transport.write` calls, the head (status line and headers) on
`http.response.start` and the body on `http.response.body`, and uvloop sends each at once: two
send(2) calls per response, each one running the kernel's loopback delivery and waking the client
in the server's own CPU time. That was about a fifth of the door's sampled time on a served recall
(`RequestResponseCycle.send`), for a head of ~200 bytes that the body follows a few microseconds
later in the same step of the same task.

What it does: the connection's protocol arms it when a request's head is complete; the next write
(that response's head) is held, and goes out with the write after it (the body) in one call. If no
write follows in the same turn of the event loop (a streamed body that is not ready yet, a HEAD
response, a `100 Continue`), the held bytes are written alone at the loop's next turn, as before.

What stays exactly as it was: the bytes on the wire and their order. Held bytes are always written
before anything written after them, and before the connection is closed or half-closed; nothing is
held across an await of the writer; every other call reaches the transport itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["HeldHeadTransport"]


class HeldHeadTransport:
    """The connection's transport, as the protocol and each response cycle see it."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._armed = False
        self._held: bytes | None = None

    def hold_next_write(self) -> None:
        """The next write (a response's head) waits for the one after it (its body)."""
        self._armed = True

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self.transport.write(held + data)
        elif self._armed:
            self._armed = False
            self._held = bytes(data)
            self._loop.call_soon(self._flush)  # nothing follows in this turn: it goes alone
        else:
            self.transport.write(data)

    def _flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self.transport.is_closing():  # the peer went away meanwhile: nobody reads it
                self.transport.write(held)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def write_eof(self) -> None:
        self._flush()
        self.transport.write_eof()

    def close(self) -> None:
        self._flush()
        self.transport.close()

    def abort(self) -> None:
        self._flush()  # as if written before the abort: the transport drops what it could not send
        self.transport.abort()

    # asked on every request: spelled out rather than found through __getattr__
    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def pause_reading(self) -> None:
        self.transport.pause_reading()

    def resume_reading(self) -> None:
        self.transport.resume_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)
