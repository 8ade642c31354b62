"""The leakage contract every adapter must pass, importable by third parties."""
