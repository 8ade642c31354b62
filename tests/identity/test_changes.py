"""A topic's change number (identity/storage/changes.py): raised by every committed row written
to its tables, by any connection, and by nothing else; read again only when the file's commit
stamp moved, and never told when there is no stamp."""

from __future__ import annotations

import sqlite3

import pytest

from identity.errors import ConfigurationError
from identity.storage.changes import ChangeNumber, counted_changes
from identity.storage.commits import CommitWatch
from identity.storage.migrations import apply_migrations
from identity.storage.sqlite import connect_durable

SCHEMA = (
    "CREATE TABLE watched (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE also (id INTEGER PRIMARY KEY); CREATE TABLE other (id INTEGER PRIMARY KEY)",
    counted_changes("topic", ("watched", "also")),
)


def _open(path):
    conn = connect_durable(path)
    apply_migrations(conn, "t", SCHEMA)
    return conn


def _number(conn) -> int:
    return conn.execute("SELECT n FROM change_numbers WHERE topic = 'topic'").fetchone()[0]


def test_every_committed_row_written_to_a_counted_table_raises_the_number_and_nothing_else_does(tmp_path):
    conn = _open(tmp_path / "f.sqlite3")
    plain = sqlite3.connect(tmp_path / "f.sqlite3", isolation_level=None)
    assert _number(conn) == 0
    plain.executemany("INSERT INTO watched (v) VALUES (?)", [("a",), ("b",)])
    assert _number(conn) == 2
    plain.execute("UPDATE watched SET v = 'c'")
    assert _number(conn) == 4  # one per row updated
    plain.execute("INSERT INTO also DEFAULT VALUES")
    plain.execute("DELETE FROM watched WHERE v = 'c'")
    assert _number(conn) == 7
    plain.execute("INSERT INTO other DEFAULT VALUES")  # not counted
    assert _number(conn) == 7
    plain.execute("BEGIN IMMEDIATE")
    plain.execute("INSERT INTO watched (v) VALUES ('d')")
    plain.execute("ROLLBACK")  # never committed, never counted
    assert _number(conn) == 7


def test_the_number_is_read_again_only_when_the_stamp_moved(tmp_path):
    path = tmp_path / "f.sqlite3"
    conn = _open(path)
    watch = CommitWatch(path)
    reads = 0

    def query(sql, params):
        nonlocal reads
        reads += 1
        return conn.execute(sql, params).fetchall()

    number = ChangeNumber("topic", watch.stamp, query)
    assert number.current() == 0 and number.current() == 0 and reads == 1
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("INSERT INTO other DEFAULT VALUES")  # a commit: read again, same number
    assert number.current() == 0 and reads == 2
    other.execute("INSERT INTO watched (v) VALUES ('x')")
    assert number.current() == 1 and reads == 3
    assert number.current() == 1 and reads == 3


def test_without_a_stamp_or_a_counter_no_number_is_told(tmp_path):
    path = tmp_path / "f.sqlite3"
    conn = _open(path)
    assert ChangeNumber("topic", lambda: None, lambda sql, p: conn.execute(sql, p).fetchall()).current() is None
    watch = CommitWatch(path)
    assert ChangeNumber("nothing", watch.stamp, lambda sql, p: conn.execute(sql, p).fetchall()).current() is None


@pytest.mark.parametrize("topic, tables", [("a b", ("t",)), ("t", ("x; DROP TABLE y",)), ("T'", ("t",))])
def test_only_plain_names_go_into_the_triggers(topic, tables):
    with pytest.raises(ConfigurationError):
        counted_changes(topic, tables)
