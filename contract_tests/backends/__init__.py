"""Built-in adapter factories for the contract suite; importing a module registers it."""
