"""Doors of the bridge into agent frameworks (LangGraph's `BaseStore`, ...).

Each subpackage imports its framework; nothing in the library imports this package, so the
framework stays an optional dependency (`pip install 'viking-bridge[langgraph]'`).
"""
