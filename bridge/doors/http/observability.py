"""Prometheus metrics and JSON access logs of the service.

Metrics (`/metrics`, text exposition format): request latency per route template, recalls,
scopes per recall, guard alarms, denied attempts (401/403/429) and backend errors. With several
workers, set `PROMETHEUS_MULTIPROC_DIR` (the `serve` command does) and every worker's samples
are aggregated at scrape time.

Access logs (logger `viking_bridge.access`, one JSON object per line): request id, method,
route *template* (never the raw path or query string: query text, scopes and memory ids stay
out), status, duration, principal. Never a header value, a body, memory content or query text.

Both run once per request, so what does not change between requests is done once: the latency
histogram's child per (method, route, status) is looked up once and kept (prometheus_client
validates and locks on every `labels()` call), and the log line is written field by field with
the very escaping `json.dumps` applies (it built an encoder per call).
"""

from __future__ import annotations

import logging
import os
import time
from json.encoder import encode_basestring_ascii as _json_str

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess

__all__ = ["Metrics", "access_log", "CONTENT_TYPE_LATEST"]

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.latency = Histogram("vb_http_request_duration_seconds", "Request latency by route template", ["method", "route", "status"], registry=r, buckets=_BUCKETS)
        self.recalls = Counter("vb_recalls_total", "Recalls served", registry=r)
        self.scopes = Histogram("vb_recall_scopes", "Scopes searched per recall", registry=r, buckets=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48))
        self.guard_alarms = Counter("vb_guard_alarms_total", "Hits the guard dropped from outside the ScopeSet", registry=r)
        self.denied = Counter("vb_denied_total", "Refused requests", ["status"], registry=r)
        self.backend_errors = Counter("vb_backend_errors_total", "Backend failures by error class", ["error"], registry=r)
        #: the latency histogram's children, one per label set seen (no more than the histogram
        #: itself keeps: the route is a template and the method one the HTTP parser accepted)
        self._latency_of: dict[tuple[str, str, int], Histogram] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        child = self._latency_of.get((method, route, status))
        if child is None:
            child = self._latency_of[(method, route, status)] = self.latency.labels(method, route, str(status))
        child.observe(seconds)
        if status in (401, 403, 429):
            self.denied.labels(str(status)).inc()

    def recall(self, scopes: int, alarms: int) -> None:
        self.recalls.inc()
        self.scopes.observe(scopes)
        if alarms:
            self.guard_alarms.inc(alarms)

    def exposition(self) -> bytes:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)


_log = logging.getLogger("viking_bridge.access")


def access_log(request_id: str, method: str, route: str, status: int, started: float, principal: str | None, error: str | None = None) -> None:
    if not _log.isEnabledFor(logging.INFO):
        return
    # the JSON object json.dumps(entry, separators=(",", ":")) gives, keys in this order: strings
    # escaped by its own function (ensure_ascii), numbers by their repr as it writes them
    line = (
        f'{{"ts":{float.__repr__(round(time.time(), 3))},"request_id":{_json_str(request_id)},"method":{_json_str(method)},'
        f'"route":{_json_str(route)},"status":{int.__repr__(status)},"duration_ms":{float.__repr__(round((time.perf_counter() - started) * 1000, 2))}'
    )
    if principal:
        line += ',"principal":' + _json_str(principal)
    if error:
        line += ',"error":' + _json_str(error)  # the class name only; the message may echo input
    # the record made and handled as `info` would, less its stack walk for the caller (always here)
    _log.handle(_log.makeRecord(_log.name, logging.INFO, __file__, 0, line + "}", None, None, "access_log"))
