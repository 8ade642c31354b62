"""Tests of openviking (a package: import its helpers as tests.openviking.<module>)."""
