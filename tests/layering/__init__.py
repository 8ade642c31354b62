"""Checks of the project's shape: import layering, packaging (a package: tests.layering.<module>)."""
