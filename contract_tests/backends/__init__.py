"""Built-in backend factories for the contract suite, one module per backend.

Importing a module registers its adapters with `contract_tests.registry.register_adapter`. The
suite finds these modules the way it finds a third party's: through the
`viking_bridge.contract_backends` entry points in pyproject.toml (see
`contract_tests.registry.load_registered_backends`). Nothing here lists them.
"""
