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
    _write(line + "}")


def _write(line: str) -> None:
    """`line` logged at INFO as `Logger.info` would, less its stack walk for the caller (always
    here); and when the access logger is configured the plain way, written by its handler as the
    handler would write the record, without making the record (see `_plain_handler`)."""
    handler = _plain_handler()
    if handler is None:
        _log.handle(_record(line))
        return
    handler.acquire()  # what Handler.handle, StreamHandler.emit and flush do, for a message alone
    try:
        try:
            handler.stream.write(line + handler.terminator)
            handler.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - reported as the handler reports a failed emit
            handler.handleError(_record(line))
    finally:
        handler.release()


def _record(line: str) -> logging.LogRecord:
    return _log.makeRecord(_log.name, logging.INFO, __file__, 0, line, None, None, "access_log")


def _plain_handler() -> logging.StreamHandler | None:  # type: ignore[type-arg]
    """The access logger's handler when what it writes for a record is exactly the record's
    message and its terminator, as the service's log configuration sets it up (edge.LOG_CONFIG:
    one `StreamHandler`, format "%(message)s", no filters, no propagation) and no custom record
    factory is installed; None for any other configuration, which then gets the record itself.
    Making a `LogRecord` (pid, thread, process name, times) and passing it through the handler's
    and the formatter's layers was half the access log's CPU, ~14 us of a served recall's door."""
    log = _log
    if log.disabled or log.filters or log.propagate or len(log.handlers) != 1:
        return None
    handler = log.handlers[0]
    if type(handler) is not logging.StreamHandler or handler.filters or handler.level > logging.INFO:
        return None
    formatter = handler.formatter
    if type(formatter) is not logging.Formatter:
        return None
    style = formatter._style
    if type(style) is not logging.PercentStyle or style._fmt != "%(message)s" or getattr(style, "_defaults", None):
        return None
    if logging.getLogRecordFactory() is not logging.LogRecord:
        return None
    return handler
