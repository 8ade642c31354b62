"""The embedded local backend (SQLite + numpy): the default a developer meets first."""

from adapters.local.backend import LocalBackend

__all__ = ["LocalBackend"]
