"""`serve()`: run the service on uvicorn — what `viking-bridge serve` calls.

Workers are separate processes, each building the app from the same settings (`create_app` as a
factory), so nothing that authorises lives in one worker's memory: sessions, grants, manifests,
audit and gateway nonces are in the shared SQLite state under `VIKING_BRIDGE_HOME`. With more
than one worker, metrics go through `PROMETHEUS_MULTIPROC_DIR` (a fresh directory per run).
On SIGTERM uvicorn stops accepting, lets in-flight requests finish (up to the grace period),
then the lifespan closes the bridge: every write that was acknowledged is committed already.
"""

from __future__ import annotations

import logging
import os
import sys
import shutil
import tempfile

from bridge.doors.http.settings import load_service_settings
from bridge.doors.edge import LOG_CONFIG

__all__ = ["serve"]

WORKER_HEALTHCHECK_SECONDS = 60



def check_configuration() -> None:
    """Fail at start-up, in the parent, with the setting's name (not once per worker)."""
    from bridge.doors.edge import build_edge_providers
    from bridge.assembly.settings import load_bridge_settings
    from identity.settings import load_settings

    settings = load_service_settings()
    bridge_settings = load_bridge_settings()
    shared = None
    if bridge_settings.state_url is not None:  # opening it also migrates, once, before any worker starts
        from bridge.state.postgres import open_postgres_state

        migrate_url = bridge_settings.state_migrate_url
        shared = open_postgres_state(
            bridge_settings.state_url.get_secret_value(), schema=bridge_settings.state_schema,
            migrate_url=None if migrate_url is None else migrate_url.get_secret_value(),
        )
    try:
        build_edge_providers(load_settings(), settings.providers, bridge_settings.home, settings.nonce_db_path, shared_state=shared)
    finally:
        if shared is not None:
            shared.close()


def serve(host: str | None = None, port: int | None = None, workers: int | None = None) -> int:
    import uvicorn

    from bridge.doors.connection import uvicorn_options

    settings = load_service_settings()
    host = host or settings.host
    port = settings.port if port is None else port
    workers = workers or settings.workers
    check_configuration()
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="vb-metrics-")
    logging.getLogger("viking_bridge.service").info("serving on %s:%s with %d worker(s)", host, port, workers)
    base = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    print(f"viking-bridge: serving {base}/ — console {base}/admin/, API docs {base}/docs", file=sys.stderr, flush=True)
    try:
        uvicorn.run(
            "bridge.doors.http.app:create_app", factory=True, host=host, port=port, workers=workers, log_config=LOG_CONFIG,
            timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) or None, access_log=False, server_header=False,
            limit_concurrency=None, proxy_headers=False, **uvicorn_options(),
            # a worker answers the supervisor's pings only once it has imported everything: on a
            # loaded host that takes longer than uvicorn's 5 s, and it was killed and respawned forever
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
        )
    finally:
        if metrics_dir is not None:  # the workers' metric files die with the service that made them
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(serve())
