"""Tests of bridge (a package: import its helpers as tests.bridge.<module>)."""
