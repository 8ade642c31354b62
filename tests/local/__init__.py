"""Tests of local (a package: import its helpers as tests.local.<module>)."""
