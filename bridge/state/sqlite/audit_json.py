"""The JSON text of the SQLite audit row's columns: its id lists (`json_list`, byte for byte what
`json.dumps` writes) and its detail (`encode_detail`), each without building an encoder per row
(every recall appends a row)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

__all__ = ["encode_detail", "json_list"]

#: one encoder for every detail column (json.dumps with options builds a new one per call)
encode_detail = json.JSONEncoder(ensure_ascii=False, default=str).encode
#: what json.dumps (ensure_ascii, its default) writes for one string
_encode_str = encode_basestring_ascii


def json_list(values: Iterable[Any]) -> str:
    """`json.dumps(list(values))`. A list of strings (every id list of an audit row) is written
    directly, as json.dumps writes it: json.dumps sets up an encoder per call, so a recall's row
    (25 ids, 4 scopes, no grant) took ~10 us for its three lists, ~5 us this way. Anything else
    goes through `json.dumps`.

    Ids need no escaping: when the encoder, run once over all the strings together, escapes
    nothing (an escape always lengthens the text, and it escapes character by character), each
    string's JSON is the string in quotes, and the list is written with one join instead of a
    call of the encoder per string."""
    values = list(values)
    try:
        joined = "".join(values)
    except TypeError:  # not a string: json.dumps writes it (or refuses it) as it always did
        return json.dumps(values)
    if not values:
        return "[]"
    if len(_encode_str(joined)) == len(joined) + 2:  # nothing escaped: only its two quotes added
        return '["' + '", "'.join(values) + '"]'
    return "[" + ", ".join(map(_encode_str, values)) + "]"
