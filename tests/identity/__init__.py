"""Tests of identity (a package: import its helpers as tests.identity.<module>)."""
