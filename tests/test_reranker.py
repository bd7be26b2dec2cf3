"""The passage reranker: settings, its place in search, and the shipped model on real passages.

A scripted reranker (a test double that prefers passages holding one word) shows what search does
with any reranker: only the fused top `pool` is re-ordered, the mix with the fused rank follows
the weight, each hit carries its score. The gateway's settings, CLI and errors are checked too.
No trained model ships yet (train/ builds one), so search.rerank defaults to "off".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.rerank import load_reranker, passage_for_rerank, rerank_order, resolve
from retrieval.types import RetrievalError


class WordReranker:
    """Test double: a passage scores 10 per occurrence of `word`; records what it was asked."""

    def __init__(self, word: str) -> None:
        self.word = word.lower()
        self.calls: list[int] = []

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        self.calls.append(len(passages))
        return np.array([10.0 * p.lower().count(self.word) for p in passages], dtype=np.float32)


@pytest.fixture(scope="module")
def store(sample_data_dir: Path) -> Any:
    from retrieval.versions import IndexStore

    return IndexStore(sample_data_dir)


def test_rerank_order_mixes_score_and_fused_rank() -> None:
    scores = np.array([0.0, 0.2, 3.0], dtype=np.float32)
    assert rerank_order(scores, 0.0) == [2, 1, 0]
    # weight 1: rank 3 pays ln 3 = 1.10, still ahead; rank 2's 0.2 does not beat ln 2 = 0.69
    assert rerank_order(scores, 1.0) == [2, 0, 1]
    # a weight so large that the fused order stands
    assert rerank_order(scores, 100.0) == [0, 1, 2]
    assert math.isclose(len(rerank_order(np.zeros(0), 1.0)), 0)


def test_resolve_settings(tmp_path: Path) -> None:
    assert resolve("off") is None and resolve("") is None and load_reranker("none") is None
    with pytest.raises(RetrievalError, match="no model.onnx"):
        resolve(str(tmp_path))


def test_search_reorders_only_the_pool(store: Any, embedder: Any) -> None:
    from retrieval.search import search, search_with_timings

    q = "Which bolts hold the bed to the frame?"
    plain = search(store, embedder, q, k=5)
    word = next(w for w in ("thermistor", "firmware", "pcb", "fan") if all(w not in h.text.lower() for h in plain[:1]))
    rr = WordReranker(word)
    hits, timings = search_with_timings(store, embedder, q, k=5, reranker=rr, rerank_pool=20, rerank_weight=0.0)
    assert rr.calls == [20]  # one batch, the whole pool
    assert timings["rerank_ms"] > 0
    assert all(h.rerank_score is not None for h in hits)
    counts = [passage_for_rerank(h.title, h.heading, h.text).lower().count(word) for h in hits]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] > 0, "a pool of 20 holds a passage with the word, which must now come first"
    # A weight that no score can overcome keeps the fused order (and scores are still reported).
    kept = search(store, embedder, q, k=5, reranker=rr, rerank_pool=20, rerank_weight=1e6)
    assert [h.chunk_id for h in kept] == [h.chunk_id for h in plain]
    assert all(h.rerank_score is None for h in plain)


def test_a_missing_reranker_folder_is_a_config_error(tmp_path: Path) -> None:
    from gateway.config import ConfigError, load_settings

    with pytest.raises(ConfigError, match="search.rerank"):
        load_settings(env={"MANUALQA_DATA": str(tmp_path), "MANUALQA_SEARCH__RERANK": str(tmp_path / "nope")})


def test_index_show_names_embedder_and_reranker(sample_data_dir: Path, tmp_path: Path) -> None:
    import shutil

    from click.testing import CliRunner

    from gateway.cli import main

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    env = {"MANUALQA_DATA": str(data), "MANUALQA_SEARCH__RERANK": "off"}
    res = CliRunner().invoke(main, ["index", "show", "--json"], env=env)
    assert res.exit_code == 0, res.output
    body = json.loads(res.output)
    assert body["embedding"]["model_hash"] and body["reranker"] == {"setting": "off"}
    text = CliRunner().invoke(main, ["index", "show"], env=env).output
    assert "reranker  off" in text and "embedding " in text


