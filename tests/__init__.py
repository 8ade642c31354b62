"""The project's own tests (a package, so helpers are imported by dotted path: tests.identity.idtestkit)."""
