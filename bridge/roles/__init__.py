"""Role files (seed 002's `AgentMemoryScope`, moved out of code) and federated injection.

    model.py       the role file's schema: agents, domains, tiers, layers, budgets, router rules
    loader.py      TOML -> `Roles`, every mistake a `RoleFileError` naming the file and the field
    router.py      task text -> primary + auxiliary domains (`IntentRouter`; `KeywordRouter`)
    planner.py     candidates -> the manifest's memory refs under per-domain tier budgets
    book.py        `RoleBook`: the loaded file's roles, teams and router (data; no permission)
    teams.py       team membership as data, and the role file's teams applied at open

Who may inject into whom is `bridge/policy/roles.py`; the operation is
`bridge/operations/roles.py` (`RoleInject`), its handler `bridge/handlers/roles.py`; seed 002's
phase-7 demo data is `bridge/doors/cli/scenario.py`.

Below the handlers and the facade: nothing here imports them (tests/layering checks it).

Nothing here widens what an identity reads: a role only narrows (domains, tiers, layers, kinds)
what the parent could already inject, and the injection manifest stays the enforcement unit.
"""
