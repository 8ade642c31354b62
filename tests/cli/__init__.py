"""Tests of cli (a package: import its helpers as tests.cli.<module>)."""
