"""`python -m contract_tests.openviking_server [--mode api_key|trusted]`: run a throw-away server.

Starts a local OpenViking server (see `server.py`), prints ONE JSON line on stdout —
`{"url", "root_api_key", "auth_mode", "startup_seconds"}` — then keeps it running until stdin
closes (the parent process exits or closes the pipe) or SIGTERM/SIGINT arrives, and stops it
(process group killed, temp dir removed). This is how code that must not import the contract
suite (the benchmarks) gets a server: run this as a subprocess and read the line.

The root key is printed because the only reader is the parent's pipe; it opens a loopback server
that lives as long as this process. Never point this at anything else.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from contract_tests.openviking_server.server import running_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contract_tests.openviking_server", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["api_key", "trusted"], default="api_key", help="server auth mode")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with running_server(args.mode) as srv:
        line = {"url": srv.url, "root_api_key": srv.root_api_key, "auth_mode": args.mode, "startup_seconds": round(srv.startup_seconds, 2)}
        print(json.dumps(line), flush=True)
        # Wait for EOF on stdin in a daemon thread so a signal can end the wait too.
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
