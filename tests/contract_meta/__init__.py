"""Tests of contract_meta (a package: import its helpers as tests.contract_meta.<module>)."""
