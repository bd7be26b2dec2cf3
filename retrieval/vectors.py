"""The dense half of an index version: a FAISS inner-product index over normalised vectors.

Vector ``i`` is chunk row ``i`` of the chunk store. Small corpora use an exact flat index; from
``HNSW_THRESHOLD`` vectors on, an HNSW graph keeps a query in the low milliseconds (see
docs/bench/search_latency.md for the measurement). Both keep the raw vectors, so scores of any row
can be computed exactly and embeddings of unchanged manuals re-used by the next version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from retrieval.types import RetrievalError

HNSW_THRESHOLD = 50_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128
# Below this share of the index, a scoped search is done exactly on the allowed rows; above it,
# the index is searched with an ID selector.
EXACT_SUBSET_SHARE = 0.25


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise RetrievalError("faiss is not installed; install it with `pip install faiss-cpu`") from exc
    return faiss


def _as_matrix(vectors: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(vectors, dtype=np.float32)
    if arr.ndim != 2:
        raise RetrievalError(f"vectors must be a 2-D array, got shape {arr.shape}")
    return arr


class VectorIndex:
    def __init__(self, index: Any) -> None:
        faiss = _faiss()
        self._index = index
        flat = faiss.downcast_index(index.storage) if isinstance(index, faiss.IndexHNSW) else index
        n, d = index.ntotal, index.d
        # Zero-copy view of the stored vectors; valid as long as self._index lives.
        self._xb = (faiss.rev_swig_ptr(flat.get_xb(), n * d).reshape(n, d) if n
                    else np.zeros((0, d), dtype=np.float32))

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "auto") -> VectorIndex:
        """``kind``: "auto" (flat below HNSW_THRESHOLD, else HNSW), "flat" or "hnsw"."""
        faiss = _faiss()
        arr = _as_matrix(vectors)
        n, d = arr.shape
        if d == 0:
            raise RetrievalError("vectors have zero dimensions")
        if n and not np.allclose(np.linalg.norm(arr[: min(n, 1000)], axis=1), 1.0, atol=1e-3):
            raise RetrievalError("vectors must be L2-normalised (inner product = cosine)")
        if kind not in {"auto", "flat", "hnsw"}:
            raise RetrievalError(f"unknown vector index kind {kind!r}")
        if kind == "hnsw" or (kind == "auto" and n >= HNSW_THRESHOLD):
            index = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            index.hnsw.efSearch = HNSW_EF_SEARCH
        else:
            index = faiss.IndexFlatIP(d)
        if n:
            index.add(arr)
        return cls(index)

    def save(self, path: Path) -> None:
        _faiss().write_index(self._index, str(path))

    @classmethod
    def load(cls, path: Path) -> VectorIndex:
        path = Path(path)
        if not path.is_file():
            raise RetrievalError(f"vector index {path} does not exist")
        try:
            index = _faiss().read_index(str(path))
        except RuntimeError as exc:
            raise RetrievalError(f"vector index {path} cannot be read: {exc}") from exc
        return cls(index)

    @property
    def ntotal(self) -> int:
        return int(self._index.ntotal)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    @property
    def kind(self) -> str:
        return "hnsw" if isinstance(self._index, _faiss().IndexHNSW) else "flat"

    def _query(self, qvec: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(qvec, dtype=np.float32).reshape(1, -1)
        if q.shape[1] != self.dim:
            raise RetrievalError(f"query vector has {q.shape[1]} dimensions, the index has {self.dim}")
        return q

    def search(self, qvec: np.ndarray, n: int, allowed_rows: np.ndarray | None = None
               ) -> list[tuple[int, float]]:
        """Top-``n`` (row, cosine), best first, optionally restricted to ``allowed_rows``."""
        q = self._query(qvec)
        if n <= 0 or self.ntotal == 0:
            return []
        if allowed_rows is not None:
            allowed = np.asarray(allowed_rows, dtype=np.int64)
            if allowed.size == 0:
                return []
            if allowed.size < self.ntotal * EXACT_SUBSET_SHARE or allowed.size <= n:
                return self._exact_subset(q[0], allowed, n)
            return self._selected(q, allowed, n)
        k = min(n, self.ntotal)
        scores, ids = self._index.search(q, k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def _exact_subset(self, q: np.ndarray, allowed: np.ndarray, n: int) -> list[tuple[int, float]]:
        scores = self._xb[allowed] @ q
        k = min(n, allowed.size)
        top = np.argpartition(-scores, k - 1)[:k] if k < allowed.size else np.arange(allowed.size)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(allowed[i]), float(scores[i])) for i in top]

    def _selected(self, q: np.ndarray, allowed: np.ndarray, n: int) -> list[tuple[int, float]]:
        faiss = _faiss()
        lo, hi = int(allowed.min()), int(allowed.max()) + 1
        if hi - lo == allowed.size:  # manuals are stored contiguously, so this is the usual case
            sel = faiss.IDSelectorRange(lo, hi)
        else:
            sel = faiss.IDSelectorBatch(allowed)
        if self.kind == "hnsw":
            share = allowed.size / self.ntotal
            params = faiss.SearchParametersHNSW(sel=sel, efSearch=int(max(HNSW_EF_SEARCH, 2 * n) / share))
        else:
            params = faiss.SearchParameters(sel=sel)
        k = min(n, allowed.size)
        scores, ids = self._index.search(q, k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """Stored vectors of ``rows`` (a copy), e.g. to carry unchanged manuals into a new version."""
        idx = np.asarray(rows, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self.ntotal):
            raise RetrievalError(f"rows out of range 0..{self.ntotal - 1}")
        vectors: np.ndarray = self._xb[idx].copy()
        return vectors

    def cosine(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact cosine of the query and each row (vectors are normalised)."""
        scores: np.ndarray = self.reconstruct(rows) @ self._query(qvec)[0]
        return scores
