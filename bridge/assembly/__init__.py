"""How a bridge is put together: settings, the registry of backends, and the openers.

    settings.py   `BridgeSettings`: every `VIKING_BRIDGE_*` setting, validated at start-up
    backends.py   the one registry of backends (name -> settings model -> opener) that the
                  library, the service, MCP, the CLI, migrate and the contract suite all ask
    opening.py    `open_local`, `with_backend`, `from_settings`: a `MemoryBridge` from parts

Nothing outside this package reads a `VIKING_BRIDGE_*` variable of the bridge's own settings:
every door opens its bridge through here, so adding a backend is its adapter folder and one entry
in `backends.py`.
"""
