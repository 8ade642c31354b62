"""The lexical postings of one partition, held in memory beside its vectors.

Why in memory: reading candidates out of the FTS5 index for every search cost 0.3-1.5 ms (a
MATCH over every scope-tagged query token, the joined row, the stored terms split again in
Python), several times the vector scan it is fused with. A partition is already the unit a
recall reads, so its words are kept the same way: sorted term digests with the position of the
row that holds them and how often. Scoring a question is then a binary search per query term
per partition and a few vector operations, whatever the words.

How it stays right: postings are keyed by the partition's row positions and are only ever read
together with that partition. Rows appended after a build are indexed by the next search that
needs them (`LocalLexical._postings`), from the FTS5 index's stored terms; any other change of
positions (a removal) drops them, and so does a reload of the partition (an edit of content,
another process's write, erasure). A row's status, kind and expiry are not in here: the search
masks the same rows the vector channel masks, at query time, so a forgotten or expired memory is
never found by its words.

The stored terms are `<scope tag>x<12 hex digits>` tokens separated by single spaces
(adapters/local/lexical.py); a token of any other shape is ignored here, never guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["Postings", "digest_value"]

_HEX_DIGITS = 12  # the digest width of adapters/local/lexical._digest (6 bytes)
#: ASCII code -> its hex digit's value; 255 for any other byte
_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
_SHIFTS = np.arange(4 * (_HEX_DIGITS - 1), -1, -4, dtype=np.uint64)


def digest_value(hex_digest: str) -> int:
    """A term digest (12 hex digits) as the integer the postings are sorted by."""
    return int(hex_digest, 16)


@dataclass(frozen=True, slots=True)
class Postings:
    """Who holds which term among positions [start, end) of one partition.

    `digests` is sorted; `positions` and `counts` run beside it (the row's position in the
    partition, how often the term occurs there); `lengths` is the number of terms of each row,
    indexed by position - start."""

    start: int
    end: int
    digests: np.ndarray  # uint64
    positions: np.ndarray  # int32
    counts: np.ndarray  # float32
    lengths: np.ndarray  # float32

    @classmethod
    def build(cls, start: int, end: int, tag: int, rows: Sequence[tuple[int, str]]) -> "Postings":
        """Postings of positions [start, end) from (position, stored terms) rows of this scope.

        Vectorised: every well-formed token has the same width (`<tag>x` + 12 hex digits), so the
        rows' tokens, each followed by one space, form a fixed-stride byte matrix; a row whose
        text does not have that shape is left out (it stays findable by its vector)."""
        prefix = f"{tag}x".encode("ascii")
        width = len(prefix) + _HEX_DIGITS + 1
        lengths = np.zeros(end - start, dtype=np.float32)
        kept_positions: list[int] = []
        kept_tokens: list[int] = []
        parts: list[str] = []
        for position, text in rows:
            if not text or not isinstance(text, str) or not text.isascii() or (len(text) + 1) % width:
                continue
            n = (len(text) + 1) // width
            lengths[position - start] = n
            kept_positions.append(position)
            kept_tokens.append(n)
            parts.append(text)
        if not parts:
            empty = np.zeros(0, dtype=np.uint64)
            return cls(start, end, empty, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), lengths)
        raw = np.frombuffer((" ".join(parts) + " ").encode("ascii"), dtype=np.uint8).reshape(-1, width)
        owner = np.repeat(np.asarray(kept_positions, dtype=np.int32), kept_tokens)
        nibbles = _NIBBLE[raw[:, len(prefix) : len(prefix) + _HEX_DIGITS]]
        ok = (raw[:, : len(prefix)] == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)
        ok &= raw[:, -1] == ord(" ")
        ok &= (nibbles != 255).all(axis=1)
        digests = (nibbles[ok].astype(np.uint64) << _SHIFTS).sum(axis=1, dtype=np.uint64)
        owner = owner[ok]
        order = np.lexsort((owner, digests))
        digests, owner = digests[order], owner[order]
        if len(digests):  # one posting per (term, row), with its count
            first = np.flatnonzero(np.r_[True, (digests[1:] != digests[:-1]) | (owner[1:] != owner[:-1])])
            counts = np.diff(np.r_[first, len(digests)]).astype(np.float32)
            digests, owner = digests[first], owner[first]
        else:
            counts = np.zeros(0, dtype=np.float32)
        return cls(start, end, digests, owner.astype(np.int32), counts, lengths)

    def lookup(self, digest: np.uint64) -> tuple[np.ndarray, np.ndarray]:
        """(positions, counts) of the rows holding `digest`."""
        lo = int(np.searchsorted(self.digests, digest, side="left"))
        hi = int(np.searchsorted(self.digests, digest, side="right"))
        return self.positions[lo:hi], self.counts[lo:hi]

    @classmethod
    def merged(cls, pieces: Sequence["Postings"]) -> "Postings":
        """One Postings of consecutive pieces (each piece's positions follow the previous one's)."""
        digests = np.concatenate([p.digests for p in pieces])
        positions = np.concatenate([p.positions for p in pieces])
        counts = np.concatenate([p.counts for p in pieces])
        order = np.argsort(digests, kind="stable")
        return cls(pieces[0].start, pieces[-1].end, digests[order], positions[order], counts[order],
                   np.concatenate([p.lengths for p in pieces]))

    @property
    def nbytes(self) -> int:
        return self.digests.nbytes + self.positions.nbytes + self.counts.nbytes + self.lengths.nbytes
