"""Doors for agent frameworks (an MCP server, ...): each maps its own requests onto the bridge's
operations and takes identity only from a verified credential, never from a request field."""
