"""The passage reranker: settings, its place in search, and the shipped model on real passages.

A scripted reranker (a test double that prefers passages holding one word) shows what search does
with any reranker: only the fused top `pool` is re-ordered, the mix with the fused rank follows
the weight, each hit carries its score. The gateway's settings, CLI and errors are checked too.
The shipped model (retrieval/models/rerank_minilm_int8, built by train/make_reranker.py) is small,
so it is loaded for real: it matches its config, re-orders real passages, and a damaged copy of it
is refused with a message that says what to do.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.rerank import load_reranker, passage_for_rerank, rerank_order, resolve
from retrieval.types import RetrievalError, SearchParams


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
    plain = search(store, embedder, q, SearchParams(k=5))
    word = next(w for w in ("thermistor", "firmware", "pcb", "fan") if all(w not in h.text.lower() for h in plain[:1]))
    rr = WordReranker(word)
    hits, timings = search_with_timings(store, embedder, q, SearchParams(k=5, rerank_pool=20, rerank_weight=0.0),
                                        reranker=rr)
    assert rr.calls == [20]  # one batch, the whole pool
    assert timings["rerank_ms"] > 0
    assert all(h.rerank_score is not None for h in hits)
    counts = [passage_for_rerank(h.title, h.heading, h.text).lower().count(word) for h in hits]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] > 0, "a pool of 20 holds a passage with the word, which must now come first"
    # A weight that no score can overcome keeps the fused order (and scores are still reported).
    kept = search(store, embedder, q, SearchParams(k=5, rerank_pool=20, rerank_weight=1e6), reranker=rr)
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




# --- the shipped model, for real ---------------------------------------------------------------


@pytest.fixture(scope="module")
def builtin() -> Any:
    from retrieval.rerank import BUILTIN, Reranker

    return Reranker(BUILTIN)


def test_the_shipped_model_loads_and_names_itself(builtin: Any) -> None:
    from ingest.discover import sha256_file
    from retrieval.rerank import BUILTIN

    config = json.loads((BUILTIN / "config.json").read_text())
    assert config["sha256"] == sha256_file(BUILTIN / "model.onnx")  # the bytes its config names
    assert (BUILTIN / "PROVENANCE.md").read_text().count(config["sha256"]) == 1
    facts = builtin.describe()
    assert facts["model_id"] == config["model_id"].strip() and facts["model_id"].startswith("manualqa-rerank-")
    assert len(facts["model_hash"]) == 64 and facts["model_hash"] != config["sha256"]  # weights + tokenizer
    assert load_reranker("builtin").model_hash == builtin.model_hash


def test_the_shipped_model_prefers_the_passage_that_answers(builtin: Any) -> None:
    cases = [
        ("What voltage does the board need on its power jack?",
         passage_for_rerank("Board manual", "Power supply",
                            "The board is powered through the DC jack from a 12 V, 1 A adapter. "
                            "Do not exceed 16 V on the power jack."),
         passage_for_rerank("Board manual", "Ordering", "The board ships in an antistatic bag with a "
                            "printed quick-start card. Order code BRD-12 includes the enclosure.")),
        ("How do I reset the device to factory settings?",
         passage_for_rerank("Controller manual", "Factory reset",
                            "To restore factory settings, hold the RESET button for ten seconds while "
                            "powering the unit on, until the status LED blinks red."),
         passage_for_rerank("Controller manual", "Specifications",
                            "Operating temperature 0 to 50 C. Dimensions 120 x 80 x 30 mm. Weight 240 g.")),
    ]
    for question, right, wrong in cases:
        scores = builtin.score(question, [wrong, right])
        assert scores.shape == (2,) and np.isfinite(scores).all()
        assert scores[1] > scores[0], question
    # int8 activations take one scale per run, so a score moves a little with its batch (one batch
    # is one question's pool at query time); the order of the right passage does not
    alone = builtin.score(cases[0][0], [cases[0][1]])
    assert np.isfinite(alone).all() and alone.shape == (1,)
    assert builtin.score("anything", []).shape == (0,)


def test_the_shipped_model_reorders_search(store: Any, embedder: Any, builtin: Any) -> None:
    from retrieval.search import search

    found = 0
    for q in ("How do I flash the Klipper firmware onto the SKR Mini E3?", "Which bolts hold the bed to the frame?",
              "What temperature should the hot end reach?"):
        plain = search(store, embedder, q, SearchParams(k=20))
        hits = search(store, embedder, q, SearchParams(k=20, rerank_pool=20, rerank_weight=0.0), reranker=builtin)
        assert {h.chunk_id for h in hits} == {h.chunk_id for h in plain}  # the same pool, re-ordered
        scores = [h.rerank_score for h in hits]
        assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)
        found += [h.chunk_id for h in hits] != [h.chunk_id for h in plain]
    assert found, "the reranker re-orders at least one real question's candidates"


def _copy_builtin(tmp_path: Path) -> Path:
    import shutil

    from retrieval.rerank import BUILTIN

    folder = tmp_path / "rr"
    shutil.copytree(BUILTIN, folder)
    return folder


def test_a_damaged_model_file_is_refused_clearly(tmp_path: Path) -> None:
    from retrieval.rerank import Reranker

    folder = _copy_builtin(tmp_path)
    data = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(data[: len(data) // 2])  # a truncated copy
    with pytest.raises(RetrievalError, match=r"model.onnx has sha256 .* its config.json says .*search.rerank"):
        Reranker(folder)
    with pytest.raises(RetrievalError, match="damaged or replaced"):
        load_reranker(str(folder))


def test_a_model_that_onnxruntime_cannot_read_is_refused_clearly(tmp_path: Path) -> None:
    from retrieval.rerank import Reranker

    folder = _copy_builtin(tmp_path)
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    config = json.loads((folder / "config.json").read_text())
    del config["sha256"]  # nothing to compare with: the load itself must fail clearly
    (folder / "config.json").write_text(json.dumps(config))
    rr = Reranker(folder)
    with pytest.raises(RetrievalError, match="model.onnx does not load in onnxruntime"):
        rr.score("a question", ["a passage"])


def test_an_unreadable_config_is_refused_clearly(tmp_path: Path) -> None:
    from retrieval.rerank import Reranker

    folder = _copy_builtin(tmp_path)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(RetrievalError, match="config.json is unreadable"):
        Reranker(folder)


def test_index_show_and_doctor_name_the_shipped_reranker(sample_data_dir: Path, tmp_path: Path,
                                                         builtin: Any) -> None:
    import shutil

    from click.testing import CliRunner

    from gateway.cli import main

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    env = {"MANUALQA_DATA": str(data), "MANUALQA_SEARCH__RERANK": "builtin"}
    res = CliRunner().invoke(main, ["index", "show", "--json"], env=env)
    assert res.exit_code == 0, res.output
    rr = json.loads(res.output)["reranker"]
    assert rr["setting"] == "builtin" and rr["model_id"] == builtin.model_id
    assert rr["model_hash"] == builtin.model_hash and rr["pool"] >= 5
    text = CliRunner().invoke(main, ["index", "show"], env=env).output
    assert f"reranker  {builtin.model_id} ({builtin.model_hash[:12]}" in text

    # what `manualqa doctor` records beside its verdict (gateway/cli/runtime.py passes these facts
    # to run_and_record, which keeps them with the report; the gates are test_doctor.py's)
    from gateway.config import load_settings
    from gateway.records.deployments import last_doctor_report, save_doctor_report
    from gateway.services import Services

    facts = Services(load_settings(env=env)).retrieval_facts()
    save_doctor_report(data, {"profile": {"name": "rr-check"}, "passed": True}, retrieval=facts)
    record = last_doctor_report(data, "rr-check")
    assert record is not None
    assert record["retrieval"]["reranker"]["model_id"] == builtin.model_id
    assert record["retrieval"]["reranker"]["model_hash"] == builtin.model_hash
    assert record["retrieval"]["embedding"]["model_hash"]
    # the best-sentence step (and the word share) need no model of their own: scored with that embedder
    assert record["retrieval"]["sentence_rank"] == {"weight": 4.0, "pool": 20, "term_weight": 3.0}


def test_a_damaged_reranker_shows_in_index_show(sample_data_dir: Path, tmp_path: Path) -> None:
    import shutil

    from click.testing import CliRunner

    from gateway.cli import main

    folder = _copy_builtin(tmp_path)
    (folder / "model.onnx").write_bytes(b"damaged")
    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    env = {"MANUALQA_DATA": str(data), "MANUALQA_SEARCH__RERANK": str(folder)}
    res = CliRunner().invoke(main, ["index", "show"], env=env)
    assert res.exit_code == 0, res.output
    assert "reranker  reranker" in res.output and "damaged or replaced" in res.output
