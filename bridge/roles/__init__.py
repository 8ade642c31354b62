"""Role files (seed 002's `AgentMemoryScope`, moved out of code) and federated injection.

    model.py       the role file's schema: agents, domains, tiers, layers, budgets, router rules
    loader.py      TOML -> `Roles`, every mistake a `RoleFileError` naming the file and the field
    router.py      task text -> primary + auxiliary domains (`IntentRouter`; `KeywordRouter`)
    planner.py     candidates -> the manifest's memory refs under per-domain tier budgets
    permissions.py who may inject into whom, re-inject, write back where (pure functions)
    operation.py   `RoleInject`: the coordinator's turn (handler: bridge/handlers/federation.py)
    scenario.py    seed 002's phase-7 task, memories and agent stubs (bridge/demo_multiagent.py)

Below the handlers and the facade: nothing here imports them (tests/layering checks it).

Nothing here widens what an identity reads: a role only narrows (domains, tiers, layers, kinds)
what the parent could already inject, and the injection manifest stays the enforcement unit.
"""
