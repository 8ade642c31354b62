"""The HTTP routes: each maps one request model (plus the authenticated identity) to one operation."""
