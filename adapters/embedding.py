"""Text -> vector. The default needs no download and treats Chinese and English alike.

`HashingEmbedder` hashes word tokens, character trigrams of Latin words, and CJK character
unigrams/bigrams into a fixed number of signed buckets (the "hashing trick"), then L2-normalises.
It is deterministic across processes and machines (blake2b, not Python's salted `hash`), so a
store built today can be reopened tomorrow, and the OpenViking test server can be given the very
same vectors. It is lexical, not semantic: good enough for a local fallback and for tests; point
`OpenAICompatibleEmbedder` at a real model for semantic recall.

Every embedder has a `signature` naming its algorithm and parameters; a store records the
signature it was built with and refuses to open with another (vectors from two embedders are not
comparable, and mixing them silently ruins recall).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Protocol, Sequence, runtime_checkable

import httpx
import numpy as np

from adapters.errors import BackendError, BackendMisconfigured, Unavailable
from adapters.http import http_client_for

__all__ = ["Embedder", "HashingEmbedder", "OpenAICompatibleEmbedder", "EmbeddingError", "EmbeddingUnavailable", "EmbeddingMisconfigured"]


class EmbeddingError(BackendError):
    """The embedder could not produce vectors. Catch this for both leaves below."""


class EmbeddingUnavailable(EmbeddingError, Unavailable):
    """The embedding endpoint failed or answered garbage (transient: retry later)."""


class EmbeddingMisconfigured(EmbeddingError, BackendMisconfigured):
    """The model answers vectors of another shape than configured, or the embedder is set up
    wrongly (a ConfigurationError: retrying cannot help)."""


@runtime_checkable
class Embedder(Protocol):
    signature: str  # e.g. "hashing-ngram-v1/dim=384"; stored with every vector store
    dimension: int

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dimension), rows L2-normalised (or all-zero)."""
        ...


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= code <= 0x4DBF  # extension A
        or 0x20000 <= code <= 0x2A6DF  # extension B
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
    )


def features(text: str) -> list[str]:
    """The hashed features of `text`: words, Latin trigrams, CJK unigrams and bigrams."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for token in _TOKEN.findall(text):
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


class HashingEmbedder:
    """Deterministic signed feature hashing; no model, no network."""

    def __init__(self, dimension: int = 384) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise EmbeddingMisconfigured(f"dimension must be an integer of at least 8, got {dimension!r}", backend="embedding")
        self.dimension = dimension
        self.signature = f"hashing-ngram-v1/dim={dimension}"

    def embed_one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        for feat in features(text):
            digest = hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            index = value % self.dimension
            sign = 1.0 if (value >> 63) & 1 else -1.0
            weight = 1.5 if feat.startswith(("w:", "b:")) else 1.0
            vec[index] += sign * weight
        norm = float(np.linalg.norm(vec))
        if norm > 0:
            vec /= norm
        return vec

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.embed_one(t) for t in texts])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_sync(texts)

    def __repr__(self) -> str:
        return f"HashingEmbedder({self.signature})"


class OpenAICompatibleEmbedder:
    """Any `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, a gateway). The key is never shown."""

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        *,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.dimension = dimension
        self.model = model
        self.signature = f"openai-compatible/{model}/dim={dimension}"
        self._base_url = base_url.rstrip("/")
        # The key goes into each request's headers, never into a caller's shared client.
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client, self._owns_client = http_client_for(http_client=client, transport=transport, timeout=timeout)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            response = await self._client.post(self._base_url + "/embeddings", json={"model": self.model, "input": list(texts)}, headers=self._headers)
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            matrix = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            raise EmbeddingUnavailable(f"embedding request to model {self.model!r} failed: {type(exc).__name__}", backend="embedding") from None
        if matrix.shape != (len(texts), self.dimension):
            raise EmbeddingMisconfigured(f"model {self.model!r} returned shape {matrix.shape}, expected {(len(texts), self.dimension)}", backend="embedding")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({self.signature})"
