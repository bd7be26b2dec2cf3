"""The embedder's self-check on the machine it runs on (retrieval.embedders.self_check): real ONNX models
run by onnxruntime, with the built-in MiniLM's tokenizer. One gives every text the same vector (as
multilingual-e5 did under an emulated CPU its int8 kernels mishandled), one embeds noise (each token a
random vector); both load fine and are refused at first use with the reason, by the library and by
`manualqa ingest`. The shipped models answer the known questions.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.embedders.base import MINILM_CONFIG_DIR
from retrieval.types import RetrievalError

onnx = pytest.importorskip("onnx", reason="onnx comes with the dev lock (make install-dev), as for the conversions")
DIM = 384
VOCAB = 30522  # the MiniLM tokenizer's


def model_dir(folder: Path, name: str, graph_nodes: list[object], initializers: list[object]) -> Path:
    """A directory the ONNX embedder reads: model.onnx (input_ids, attention_mask -> [batch, tokens, DIM]
    token vectors, mean-pooled by the embedder) and the built-in MiniLM's tokenizer and settings."""
    from onnx import TensorProto, helper

    out = folder / name
    out.mkdir()
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
              for n in ("input_ids", "attention_mask")]
    output = helper.make_tensor_value_info("tokens_out", TensorProto.FLOAT, ["batch", "tokens", DIM])
    graph = helper.make_graph(graph_nodes, name, inputs, [output], initializer=initializers)  # type: ignore[arg-type]
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(out / "model.onnx"))
    for part in ("tokenizer.json", "sentence_bert_config.json"):
        shutil.copy(MINILM_CONFIG_DIR / part, out / part)
    shutil.copytree(MINILM_CONFIG_DIR / "1_Pooling", out / "1_Pooling")
    return out


def table_model(folder: Path, name: str, table: np.ndarray) -> Path:
    """Each token's vector is its row of `table`: Gather(table, input_ids)."""
    from onnx import helper, numpy_helper

    init = numpy_helper.from_array(table.astype(np.float32), "table")
    node = helper.make_node("Gather", ["table", "input_ids"], ["tokens_out"], axis=0)
    return model_dir(folder, name, [node], [init])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("self-check")


@pytest.fixture(scope="module")
def collapsed(folder: Path) -> Path:
    """Every token the same vector, give or take 1 % noise: every text nearly the same vector."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal(DIM)
    return table_model(folder, "collapsed", base + 0.01 * rng.standard_normal((VOCAB, DIM)))


@pytest.fixture(scope="module")
def noise(folder: Path) -> Path:
    """A random vector per token: texts differ, but not by what they mean."""
    return table_model(folder, "noise", np.random.default_rng(11).standard_normal((VOCAB, DIM)))


def test_a_model_that_gives_one_vector_to_every_text_is_refused(collapsed: Path) -> None:
    from retrieval.embedders.onnx import OnnxEmbedder

    embedder = OnnxEmbedder(f"onnx:{collapsed}")  # loads lazily: constructing it is fine
    with pytest.raises(RetrievalError, match=r"fails its self-check on this machine: it gives every text nearly "
                                             r"the same vector \(passages on unrelated topics at cosine "
                                             r"(0\.9[7-9]\d|1\.000) or more"):
        embedder.encode(["Clean the filter."])
    with pytest.raises(RetrievalError, match="self-check"):  # and again: never half-loaded
        embedder.encode_query("fuse?")


def test_a_model_that_embeds_noise_is_refused(noise: Path) -> None:
    from retrieval.embedders.onnx import OnnxEmbedder

    with pytest.raises(RetrievalError, match=r"fails its self-check on this machine: \d of 4 known questions are "
                                             r"nearer another question's passage"):
        OnnxEmbedder(f"onnx:{noise}").encode(["Clean the filter."])


def test_ingest_with_a_failing_embedder_says_why_and_keeps_the_index(noise: Path, tmp_path: Path) -> None:
    manualqa = Path(sys.executable).with_name("manualqa")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MANUALQA_DATA": str(tmp_path / "data"),
           "MANUALQA_EMBEDDING__COMPANION": "off"}
    sample = Path(__file__).resolve().parent.parent / "sample_manuals"
    pdf = sorted(sample.glob("*.pdf"))[0]
    first = subprocess.run([str(manualqa), "ingest", str(pdf)], env=env, capture_output=True, text=True,
                           timeout=900, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    bad = subprocess.run([str(manualqa), "ingest", str(sample)], capture_output=True, text=True, timeout=900,
                         env={**env, "MANUALQA_EMBEDDING__MODEL": f"onnx:{noise}"}, cwd=tmp_path)
    assert bad.returncode != 0
    assert "fails its self-check on this machine" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    after = subprocess.run([str(manualqa), "search", "fuse", "--json"], env=env, capture_output=True, text=True,
                           timeout=900, cwd=tmp_path)
    assert after.returncode == 0 and pdf.name in after.stdout, after.stderr  # the active index still serves


def test_the_shipped_embedders_answer_the_known_questions() -> None:
    from retrieval.embedders.onnx import OnnxEmbedder
    from retrieval.embedders.self_check import failure

    minilm = OnnxEmbedder()
    assert failure(lambda t: np.stack([minilm.encode_query(x) for x in t]), minilm.encode, False) is None
    assert minilm.encode(["Clean the filter."]).shape == (1, DIM)  # loaded: the check passed


def test_auto_passes_over_a_companion_that_fails_here(collapsed: Path, tmp_path: Path) -> None:
    """embedding.companion = "auto" found a converted companion in the data folder, and it fails its self-check
    on this machine: the gateway warns and searches with MiniLM alone (as without a companion), and the index
    it writes records none."""
    import json

    data = tmp_path / "data"
    e5 = data / "embedders" / "multilingual-e5-small-int8"
    shutil.copytree(collapsed, e5)
    (e5 / "manualqa_embedder.json").write_text(json.dumps({
        "format": 1, "pooling": "mean", "prompts": {"query": "query: ", "document": "passage: "},
        "multilingual": True, "max_seq_length": 128}))
    manualqa = Path(sys.executable).with_name("manualqa")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MANUALQA_DATA": str(data),
           "MANUALQA_EMBEDDING__COMPANION": "auto"}
    pdf = sorted((Path(__file__).resolve().parent.parent / "sample_manuals").glob("*.pdf"))[0]
    run = subprocess.run([str(manualqa), "ingest", str(pdf)], env=env, capture_output=True, text=True,
                         timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert 'embedding.companion = "auto": ONNX embedding model' in run.stderr, run.stderr
    assert "fails its self-check on this machine" in run.stderr and "searching without it" in run.stderr
    shown = subprocess.run([str(manualqa), "index", "show", "--json"], env=env, capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert shown.returncode == 0 and json.loads(shown.stdout).get("companion") is None, shown.stdout[:500]
