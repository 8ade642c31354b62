"""Doors for agent frameworks (an MCP server, LangGraph's BaseStore, ...): each maps its own
requests onto the bridge's operations and takes identity only from a verified credential, never
from a request field. Nothing in the library imports these packages, so each framework stays an
optional dependency (`pip install 'viking-bridge[langgraph]'`)."""
