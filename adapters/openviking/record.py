"""How a StoredMemory is framed into an OpenViking file, and read back.

The file is the memory's content preceded by ONE header line holding the record envelope
(`adapters.shared.envelope`, shared with every remote adapter):

    <!--viking-bridge {"v":1,"id":"m…","scope":"acme/user/u17","kind":"fact",…}-->
    The user's favourite tea is sencha.

The header's `scope` and `id` are never *trusted*: the adapter derives both from the file's URI
(the principal it searched and the file name) and a record whose header disagrees raises
`CorruptRecord` (alias `RecordError`); the adapter drops it and raises an alarm, never returns it.
"""

from __future__ import annotations

from adapters.base import StoredMemory
from adapters.shared.envelope import dump_envelope, from_envelope, load_envelope, to_envelope
from adapters.errors import CorruptRecord
from adapters.scopes import ScopeKey

__all__ = ["HEADER_PREFIX", "encode_record", "decode_record", "RecordError"]

HEADER_PREFIX = "<!--viking-bridge "
_HEADER_SUFFIX = "-->"

#: The old name of the decode failure; it is `adapters.errors.CorruptRecord` now.
RecordError = CorruptRecord


def encode_record(memory: StoredMemory) -> str:
    line = dump_envelope(to_envelope(memory))  # ASCII JSON: "-->" can only appear inside a string
    line = line.replace(_HEADER_SUFFIX, "--\\u003e")
    return f"{HEADER_PREFIX}{line}{_HEADER_SUFFIX}\n{memory.content}"


def decode_record(text: object, *, expected_scope: ScopeKey, expected_id: str) -> StoredMemory:
    """Parse a file; `CorruptRecord` if it is not ours or its header names another place."""
    if not isinstance(text, str) or not text.startswith(HEADER_PREFIX):
        raise CorruptRecord("no viking-bridge header")
    first, _, content = text.partition("\n")
    if not first.endswith(_HEADER_SUFFIX):
        raise CorruptRecord("unterminated header")
    envelope = load_envelope(first[len(HEADER_PREFIX) : -len(_HEADER_SUFFIX)])
    return from_envelope(envelope, scope=expected_scope, memory_id=expected_id, content=content)
