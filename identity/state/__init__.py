"""Identity state behind protocols: session bindings, API keys and gateway nonces.

`protocols` says what every store must guarantee; `memory`, `sqlite` and `postgres` are the
stores (`nonces` holds both replay caches that need no server). A store keeps integrity rules
only; the decisions are `identity.sessions`' and `identity.providers`'.
"""
