"""The hashing embedder gives the same vectors as its plain definition, feature by feature.

Stores keep the vectors they were built with (the signature `hashing-ngram-v1` names them), so
`features()` and `HashingEmbedder.embed_one` may get faster but never different: here the
definition is written the slow, obvious way (character by character, one bucket added at a
time) and compared with the library over texts of every script the features treat apart, and a
few vectors are pinned to the bytes the embedder has always produced.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata

import numpy as np
import pytest

from adapters.shared.embedding import HashingEmbedder, features


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
        or 0xF900 <= code <= 0xFAFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF
    )


def reference_features(text: str) -> list[str]:
    """Words with their `<word>` trigrams, CJK characters with their bigrams, in text order."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for token in re.findall(r"[^\W_]+", text):
        run: list[str] = []
        latin: list[str] = []

        def flush_cjk() -> None:
            out.extend("c:" + ch for ch in run)
            out.extend("b:" + a + b for a, b in zip(run, run[1:]))
            run.clear()

        def flush_latin() -> None:
            if latin:
                word = "".join(latin)
                out.append("w:" + word)
                padded = f"<{word}>"
                out.extend("t:" + padded[i : i + 3] for i in range(len(padded) - 2))
                latin.clear()

        for ch in token:
            if _is_cjk(ch):
                flush_latin()
                run.append(ch)
            else:
                flush_cjk()
                latin.append(ch)
        flush_cjk()
        flush_latin()
    return out


def reference_vector(text: str, dimension: int) -> np.ndarray:
    vec = np.zeros(dimension, dtype=np.float32)
    for feat in reference_features(text):
        value = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
        sign = 1.0 if (value >> 63) & 1 else -1.0
        vec[value % dimension] += sign * (1.5 if feat.startswith(("w:", "b:")) else 1.0)
    norm = float(np.linalg.norm(vec))
    if norm > 0:
        vec /= norm
    return vec


#: pieces the features treat apart: ASCII words and digits, CJK of every range, kana, hangul,
#: full-width forms NFKC folds, letters casefold changes, marks, underscores and punctuation
_ALPHABET = (
    list("abcXYZ019_-. ,!?'\t\n") + ["Next.js", "ß", "İ", "é", "ﬁ", "Ｆ", "１", "㋿", "ー", "・"]
    + [chr(c) for c in (0x4E00, 0x4E2D, 0x6587, 0x9FFF, 0x3400, 0x4DBF, 0xF900, 0xFAFF, 0x3042, 0x30AB, 0x30FF, 0xAC00, 0xD7AF, 0x20000, 0x2A6DF, 0x0301)]
)


def _texts() -> list[str]:
    rng = random.Random(20261203)
    texts = ["", " ", "_", "a", "ab", "我", "我们", "what did we decide about the Next.js deployment pipeline last week?",
             "我们上周决定用 PostgreSQL 16 部署 Next.js 应用", "PostgreSQL16部署v2テスト한국어abc"]
    texts += ["".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(1, 40))) for _ in range(400)]
    return texts


@pytest.mark.parametrize("text", _texts())
def test_features_and_vectors_are_those_of_the_plain_definition(text):
    assert features(text) == reference_features(text)
    embedder = HashingEmbedder(384)
    assert embedder.embed_one(text).tobytes() == reference_vector(text, 384).tobytes()


@pytest.mark.parametrize("text, digest", [
    ("what did we decide about the Next.js deployment pipeline last week?", "1a58d385c82464d8"),
    ("我们上周决定用 PostgreSQL 16 部署", "782a06f221471b3c"),
    ("Ｆｕｌｌ-width ＡＢＣ, ß, İstanbul, 한국어 テスト ㋿", "db665000dea58312"),
    ("", "80422bc3d307b4a2"),
])
def test_vectors_are_the_bytes_stores_were_built_with(text, digest):
    assert hashlib.sha256(HashingEmbedder(384).embed_one(text).tobytes()).hexdigest()[:16] == digest
