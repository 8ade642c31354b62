"""Lists of text as ONE text parameter: joined by U+001F here, split in the statement.

Why: psycopg dumps a Python list element by element in Python (a list of 52 words: ~130 us, of 4
scope keys: ~16 us; the same joined: ~4 us), and a search sends a dozen such lists. The same
separator frames the ScopeSet's row-level-security settings (adapters/postgres/schema.py), and
for the same reason none of the values can hold it: a ScopeKey's grammar forbids control
characters, `scope_settings` drops memory ids that hold them, a query word is letters and digits,
a status is one of four words. Split, the parameter gives the list back (empty text: an empty
array). Never used for caller-chosen text (kinds): those travel as real arrays.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["SEP", "joined", "listed"]

SEP = "\x1f"


def joined(values: Sequence[str]) -> str:
    """The values as one parameter for `listed`."""
    return SEP.join(values)


def listed(name: str) -> str:
    """The SQL of the text[] the `joined` parameter `name` carries."""
    return f"string_to_array(%({name})s, chr(31))"
