"""What the service's OpenTelemetry spans may carry: a query string's keys, never its values.

Why: FastAPI records a server span per request once an OpenTelemetry SDK is configured in the
process, and puts the raw query string in it as `url.query`. For `GET /api/v1/recall` that is
the user's question (and the admin console's content search sends `text=`), which the access
log and every other log of the service deliberately never hold: a trace exporter would ship it
to whatever backend the operator runs for traces.

How: a span processor on the configured SDK tracer provider rewrites `url.query` when a span
starts, to the same keys with every value `REDACTED`. Exporters read a span when it ends, so
none sees the original. It is added when the app is built and again when the service starts (a
provider FastAPI configures at start is covered), once per provider.

When: FastAPI's own telemetry (spans, request metrics, exception logs) is switched on when the
app is built (`fastapi_telemetry`), or left to FastAPI when it is told to configure the
providers itself at start (FASTAPI_OTEL_AUTO_CONFIGURE, before our redaction runs at start).
Its spans go only to a provider that carries the redacting processor by then: a tracer provider
configured after the app was built, one of another SDK, or one that cannot take a processor
gets no span of FastAPI's, so no unredacted query; and a service without telemetry does not
ask, on every request, whether one has appeared since (~15 us of the door's CPU). What it does
not cover: spans made by other instrumentation that copies the URL under another attribute
name.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import os
import re
import threading
import weakref
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["QUERY_ATTRIBUTE", "fastapi_telemetry", "redact_query_strings", "redacted_query"]

QUERY_ATTRIBUTE = "url.query"

log = logging.getLogger("viking_bridge.service")

_lock = threading.Lock()
_covered: "weakref.WeakSet[Any]" = weakref.WeakSet()  # providers given the processor


#: what a parameter name looks like; any other key (`?what+is+my+dog's+name`) may itself be content
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


def redacted_query(query: str) -> str:
    """The query string's keys, in order, each with the value `REDACTED`; a key that does not
    look like a parameter name is `REDACTED` too."""
    return urlencode([(key if _NAME.fullmatch(key) else "REDACTED", "REDACTED") for key, _ in parse_qsl(query, keep_blank_values=True)])


@functools.cache
def _processor_class() -> type:
    """The SDK's SpanProcessor with `on_start` redacting `url.query`. Built on first use: only a
    process whose provider can take processors has the SDK loaded, and no other pays its import."""
    from opentelemetry.sdk.trace import SpanProcessor  # ImportError for a provider of another SDK

    class RedactQuery(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            query = (span.attributes or {}).get(QUERY_ATTRIBUTE)
            if isinstance(query, str) and query:
                span.set_attribute(QUERY_ATTRIBUTE, redacted_query(query))

    return RedactQuery


def redact_query_strings() -> bool:
    """Give the process's tracer provider the redacting processor (once). True when the provider
    is one that records spans (has `add_span_processor`) and is covered now."""
    try:
        from opentelemetry import trace
    except ImportError:  # no OpenTelemetry API: FastAPI records no span either
        return False
    provider = trace.get_tracer_provider()
    add = getattr(provider, "add_span_processor", None)
    if add is None:
        return False
    with _lock:
        if provider not in _covered:
            try:
                processor = _processor_class()()
            except ImportError:  # a provider that is not OpenTelemetry's SDK: said, not guessed at
                log.warning("the tracer provider %s is not OpenTelemetry's SDK: url.query cannot be redacted in its spans, so FastAPI records none into it",
                            type(provider).__name__)
                return False
            add(processor)
            _covered.add(provider)
    return True


#: the API's stand-ins, which record nothing: the proxies until a provider is set (what FastAPI
#: itself treats as "not configured") and the explicit no-op providers. Tracing is not decided
#: by this table but by the redaction itself (`fastapi_telemetry`).
_DEFERRED = frozenset({
    ("opentelemetry.metrics._internal", "_ProxyMeterProvider"), ("opentelemetry.metrics._internal", "NoOpMeterProvider"),
    ("opentelemetry._logs._internal", "ProxyLoggerProvider"), ("opentelemetry._logs._internal", "NoOpLoggerProvider"),
})


def _configured(provider: Any) -> bool:
    cls = type(provider)
    return (cls.__module__, cls.__name__) not in _DEFERRED


def fastapi_telemetry() -> dict[str, bool] | None:
    """FastAPI's `telemetry` setting for an app built now. Tracing is on exactly when the
    provider configured now records spans and carries the redacting processor
    (`redact_query_strings`): one rule, so no provider gets a span that could hold a question,
    whether it is set later, stands in for one (a proxy forwards to whatever is set later) or
    cannot take the processor. Metrics and logs are on when their provider is configured now.
    None (FastAPI's own defaults, which look for a provider on every request) when FastAPI has
    no such setting or is to configure the providers itself at start. Either way the provider
    configured now has the redacting processor once this returns."""
    from fastapi import FastAPI  # the door's own dependency, imported where the app is built

    covered = redact_query_strings()  # whatever is decided below: a provider configured now is redacted
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters or os.getenv("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true":
        return None
    return {
        "tracing": covered,
        "metrics": _signal_configured("opentelemetry.metrics", "get_meter_provider"),
        "logs": _signal_configured("opentelemetry._logs", "get_logger_provider"),
    }


def _signal_configured(module: str, getter: str) -> bool:
    """Whether the signal's global provider is configured; False where the API (or this part
    of it) is not installed, as FastAPI then records nothing of it either."""
    try:
        api = importlib.import_module(module)
    except ImportError:
        return False
    return _configured(getattr(api, getter)())
