"""A change number per topic of a SQLite file, raised by triggers, read only when the file moved.

Why: a commit stamp (identity/storage/commits.py) says "nothing at all was committed to this
file", which is too coarse for a file that is written all the time for other reasons. The
bridge's state file takes a group commit of recall audit rows every few dozen recalls, so a
reader's shares kept under the stamp were almost never served again: each reader asks about
once per round of readers, and a commit had always landed in between. What a kept answer
depends on is narrower than the file: the shares and team tables. A topic's change number
follows exactly those tables.

How: `counted_changes(topic, tables)` is a migration step. It adds the topic's row to
`change_numbers` and, on each table, triggers after every INSERT, UPDATE and DELETE that add
one to it, inside the writing transaction. The triggers are part of the schema: every writer
raises the number, whatever its code (another process, an older release of this one, a plain
sqlite3 client), and a rolled-back write leaves it as it was. (A client that switches triggers
off for its connection, which SQLite allows only on purpose, writes past it: such a client can
write the tables themselves anyway, so it is no boundary this number is meant to hold.)

`ChangeNumber.current()` reads the number only when the file's commit stamp has moved since it
last read it. It reads the stamp BEFORE the number: a commit landing between the two is counted
in the number read or changes the next stamp. A kept answer must be read AFTER the number it is
kept under (then it is at least as new as that number says), and is served only while the number
is unchanged. None (no stamp, no counter) keeps and serves nothing.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from identity.errors import ConfigurationError

__all__ = ["ChangeNumber", "counted_changes"]

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_EVENTS = ("insert", "update", "delete")


def counted_changes(topic: str, tables: Sequence[str]) -> str:
    """Migration SQL: `topic`'s change number, raised by every row written to any of `tables`."""
    for name in (topic, *tables):
        if not _NAME.fullmatch(name):  # names go into DDL: plain identifiers only
            raise ConfigurationError(f"counted_changes: not a plain SQL name: {name!r}")
    statements = [
        "CREATE TABLE IF NOT EXISTS change_numbers (topic TEXT PRIMARY KEY, n INTEGER NOT NULL)",
        f"INSERT OR IGNORE INTO change_numbers (topic, n) VALUES ('{topic}', 0)",
    ]
    for table in tables:
        for event in _EVENTS:
            statements.append(
                f"CREATE TRIGGER {table}_{event}_counts_{topic} AFTER {event.upper()} ON {table} "
                f"BEGIN UPDATE change_numbers SET n = n + 1 WHERE topic = '{topic}'; END"
            )
    return ";\n".join(statements) + ";\n"


class ChangeNumber:
    """`topic`'s change number in one file: `stamp` is the file's commit stamp, `query` runs a
    read on the file's connection."""

    __slots__ = ("_topic", "_stamp", "_query", "_seen")

    def __init__(self, topic: str, stamp: Callable[[], bytes | None], query: Callable[[str, tuple], list[tuple]]) -> None:
        self._topic = topic
        self._stamp = stamp
        self._query = query
        # (the stamp, the number read after it), replaced whole: a thread never sees half of it
        self._seen: tuple[bytes, int] | None = None

    def current(self) -> int | None:
        """The number now; None when it cannot be told (keep nothing then)."""
        stamp = self._stamp()
        if stamp is None:
            return None
        seen = self._seen
        if seen is not None and seen[0] == stamp:
            return seen[1]
        rows = self._query("SELECT n FROM change_numbers WHERE topic = ?", (self._topic,))
        if not rows:
            self._seen = None
            return None
        number = int(rows[0][0])
        self._seen = (stamp, number)
        return number
