"""Questions grouped by meaning, for the admin's "unanswered" view (issue 48, item 9).

Technicians word one missing fact many ways ("How long is the warranty?", "What is the warranty
period?"); the admin needs it counted once, with its count. Questions are embedded with the index's
own embedder (the model the gateway already holds) and grouped greedily: a question joins the group
whose mean direction is nearest when the cosine reaches SIMILAR, else it opens a group.

SIMILAR was measured with the packaged all-MiniLM-L6-v2 (int8 ONNX) on 21 wordings of 7 needs
(bench/experiments/question_groups.py, docs/bench/experiments/question_groups.md): wordings of one need
scored at least 0.71, different needs at most 0.50 (two about the same board); 0.6 lies between.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

SIMILAR = 0.6  # cosine at which two questions count as the same question
Encode = Callable[[list[str]], np.ndarray]

_SPACE = re.compile(r"[\W_]+", re.UNICODE)


def normalized(question: str) -> str:
    """The question without case, punctuation and spacing: the key of an exact repeat."""
    return _SPACE.sub(" ", question.casefold()).strip()


class QuestionVectors:
    """Unit vectors of questions, each text encoded once per process (the view is refreshed often,
    the questions in it change little)."""

    def __init__(self, encode: Encode, limit: int = 20000) -> None:
        self._encode = encode
        self._cache: dict[str, np.ndarray] = {}
        self._limit = limit

    def of(self, questions: Sequence[str]) -> np.ndarray:
        """One row per question (in order), L2-normalised."""
        keys = [normalized(q) for q in questions]
        missing = sorted({k for k in keys if k not in self._cache})
        if missing:
            raw = np.asarray(self._encode(missing), dtype=np.float32)
            norms = np.linalg.norm(raw, axis=1, keepdims=True)
            vectors = (raw / np.where(norms == 0, 1.0, norms)).astype(np.float32)
            if len(self._cache) + len(missing) > self._limit:
                self._cache.clear()
            self._cache.update(zip(missing, vectors, strict=True))
        if not keys:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._cache[k] for k in keys])


def group_by_similarity(vectors: np.ndarray, threshold: float = SIMILAR) -> list[list[int]]:
    """Indices of `vectors` (unit rows) in groups, each group in input order; greedy, one pass."""
    groups: list[list[int]] = []
    sums: list[np.ndarray] = []
    for i, v in enumerate(vectors):
        best, best_score = -1, threshold
        for g, total in enumerate(sums):
            norm = float(np.linalg.norm(total))
            score = float(total @ v) / norm if norm else 0.0
            if score >= best_score:
                best, best_score = g, score
        if best < 0:
            groups.append([i])
            sums.append(v.astype(np.float64).copy())
        else:
            groups[best].append(i)
            sums[best] += v
    return groups


def group_by_text(questions: Sequence[str]) -> list[list[int]]:
    """The fallback when no embedder can be loaded: exact repeats only (case and punctuation aside)."""
    index: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        index.setdefault(normalized(q), []).append(i)
    return list(index.values())
