"""Moving memories between backends: `migrate` (copy + verify + audit), resumable by design.

    endpoints.py   open a backend from a spec (local:DIR, postgres:URL, openviking:URL, viking:URL)
    records.py     a memory's migration key and fingerprint (pure functions of the source)
    copy.py        the resumable copy (lineage translated to the target's ids)
    verify.py      every source memory has its exact copy; per-scope digests
    state.py       the tenants' bridge state carried to the target's state (grants ... audit history)
    state_verify.py  both states compared after the id map
    run.py         one run: copy, carry the state, verify, audit rows, report (and the state step alone)
    cli.py         `viking-bridge migrate`, with progress
"""

from bridge.migrate.copy import CopyReport, copy_memories
from bridge.migrate.endpoints import Endpoint, open_endpoint
from bridge.migrate.run import MigrationReport, migrate
from bridge.migrate.verify import VerifyReport, verify

__all__ = ["CopyReport", "copy_memories", "Endpoint", "open_endpoint", "MigrationReport", "migrate", "VerifyReport", "verify"]
