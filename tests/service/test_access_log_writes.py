"""The access log's line reaches its stream exactly as `logging` would write its record.

observability.py writes the line through the access logger's handler without making a
`LogRecord` when the logger is configured the plain way (the service's LOG_CONFIG: one
StreamHandler printing the message alone). Here the same line is written both ways under that
configuration and under every configuration that must not take the shortcut, and the bytes on the
stream are compared; the shortcut is also shown to make no record at all."""

from __future__ import annotations

import copy
import io
import logging
import logging.config
from collections.abc import Callable, Iterator

import pytest

from bridge.doors.edge import LOG_CONFIG
from bridge.doors.http import observability

LINE = '{"ts":1.5,"request_id":"req-12345678","method":"GET","route":"/api/v1/recall","status":200,"duration_ms":0.61,"principal":"t/\\u4e2d@a"}'


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    """The access logger as the service configures it (LOG_CONFIG), on a StringIO, and nothing
    else: pytest attaches its capture handlers to every logger that does not propagate when a
    test starts, so they are taken off again. Restored after."""
    logger = logging.getLogger("viking_bridge.access")
    saved = (list(logger.handlers), list(logger.filters), logger.propagate, logger.level, logger.disabled)
    config = copy.deepcopy(LOG_CONFIG)
    config["loggers"] = {"viking_bridge.access": config["loggers"]["viking_bridge.access"]}
    logging.config.dictConfig(config)
    (configured,) = logger.handlers
    configured.setStream(io.StringIO())  # type: ignore[attr-defined]
    logger.configured = configured  # type: ignore[attr-defined]
    try:
        yield logger
    finally:
        logger.handlers[:], logger.filters[:] = saved[0], saved[1]
        logger.propagate, logger.level, logger.disabled = saved[2], saved[3], saved[4]


def _as_configured(logger: logging.Logger) -> logging.Logger:
    logger.handlers[:] = [logger.configured]  # type: ignore[attr-defined]
    return logger


def _written(logger: logging.Logger, write: Callable[[], None]) -> list[str]:
    streams = [h.stream for h in logger.handlers if isinstance(h, logging.StreamHandler)]
    for stream in streams:
        stream.seek(0)
        stream.truncate()
    write()
    return [stream.getvalue() for stream in streams]


def _both_ways(logger: logging.Logger) -> tuple[list[str], list[str]]:
    """(what the access log writes, what logging writes for the record of the same line)."""
    return _written(logger, lambda: observability._write(LINE)), _written(logger, lambda: logger.handle(observability._record(LINE)))


def test_the_service_configuration_writes_the_line_as_logging_would_without_a_record(access_logger, monkeypatch) -> None:
    _as_configured(access_logger)
    assert observability._plain_handler() is access_logger.handlers[0]
    shortcut, by_record = _both_ways(access_logger)
    assert shortcut == by_record == [LINE + "\n"]

    def no_records(*args: object, **kwargs: object) -> logging.LogRecord:
        raise AssertionError("a record was made")

    monkeypatch.setattr(access_logger, "makeRecord", no_records)
    assert _written(access_logger, lambda: observability._write(LINE)) == [LINE + "\n"]


class _Subclassed(logging.StreamHandler):  # type: ignore[type-arg]
    def emit(self, record: logging.LogRecord) -> None:
        self.stream.write("sub:" + self.format(record) + self.terminator)


def _logger_filter(logger: logging.Logger) -> None:
    logger.addFilter(lambda record: True)


def _handler_filter(logger: logging.Logger) -> None:
    logger.handlers[0].addFilter(lambda record: setattr(record, "msg", record.msg + " (filtered)") or True)


def _warning_handler(logger: logging.Logger) -> None:
    logger.handlers[0].setLevel(logging.WARNING)


def _formatted(logger: logging.Logger) -> None:
    logger.handlers[0].setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))


def _no_formatter(logger: logging.Logger) -> None:
    logger.handlers[0].setFormatter(None)  # type: ignore[arg-type]


def _subclassed(logger: logging.Logger) -> None:
    logger.handlers[:] = [_Subclassed(io.StringIO())]
    logger.handlers[0].setFormatter(logging.Formatter("%(message)s"))


def _two_handlers(logger: logging.Logger) -> None:
    second = logging.StreamHandler(io.StringIO())
    second.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(second)


def _propagating(logger: logging.Logger) -> None:
    logger.propagate = True


def _disabled(logger: logging.Logger) -> None:
    logger.disabled = True


@pytest.mark.parametrize(
    "change", [_logger_filter, _handler_filter, _warning_handler, _formatted, _no_formatter, _subclassed, _two_handlers, _propagating, _disabled],
)
def test_any_other_configuration_gets_the_record_itself(access_logger, change) -> None:
    change(_as_configured(access_logger))
    assert observability._plain_handler() is None
    shortcut, by_record = _both_ways(access_logger)
    assert shortcut == by_record


def test_a_custom_record_factory_gets_its_record(access_logger) -> None:
    made: list[logging.LogRecord] = []
    factory = logging.getLogRecordFactory()

    def counting(*args: object, **kwargs: object) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        made.append(record)
        return record

    _as_configured(access_logger)
    logging.setLogRecordFactory(counting)
    try:
        assert observability._plain_handler() is None
        assert _written(access_logger, lambda: observability._write(LINE)) == [LINE + "\n"]
    finally:
        logging.setLogRecordFactory(factory)
    assert len(made) == 1
