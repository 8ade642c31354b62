"""Tests of viking (a package: import its helpers as tests.viking.<module>)."""
