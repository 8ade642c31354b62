"""Project-wide pytest set-up.

Hypothesis' per-example deadline is a timing assertion; on a shared 2-core CI machine it turns
scheduler noise into failures, and timing goals belong in `benchmarks/`. So no deadline anywhere.
"""

from hypothesis import settings

settings.register_profile("viking-bridge", deadline=None, print_blob=True)
settings.load_profile("viking-bridge")
