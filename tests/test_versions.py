"""Index versions on real parts: the sample PDFs, the real embedding model, FAISS and SQLite.

One store is built for the module and walked through its life: first ingest, re-ingest, a changed
manual, diff, rollback, remove. Damage and gc run on copies of that store so they cannot disturb
the walk.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pypdf import PdfReader, PdfWriter

from ingest.discover import sha256_file
from ingest.models import ChunkParams, ParseLimits
from retrieval.search import search
from retrieval.types import RetrievalError, SearchParams
from retrieval.versions import IndexStore

QUESTIONS = ["How do I flash the firmware?", "Which stepper driver pins are used?", "M3x8 screws"]
PARAMS = ChunkParams()
LIMITS = ParseLimits()


def results(store: IndexStore, embedder: Any, version: str | None = None) -> list[list[tuple]]:
    return [[(h.chunk_id, h.page, h.score, h.dense_score)
             for h in search(store, embedder, q, SearchParams(k=5), version=version)]
            for q in QUESTIONS]


class OtherModel:
    """The real embedder under another model hash: what a changed embedding model looks like."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.model_id, self.model_hash, self.dim = real.model_id, "0" * 64, real.dim

    def encode(self, texts: list[str], progress: Any = None) -> np.ndarray:
        return self._real.encode(texts, progress=progress)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sample_pdfs: list[Path], embedder: Any) -> dict:
    """v1: both samples; v2: voron0 replaced by a copy without its last page; v3: noaa removed."""
    root = tmp_path_factory.mktemp("versions")
    store = IndexStore(root / "data")
    w: dict[str, Any] = {"root": root, "store": store}
    w["r1"] = store.ingest(sample_pdfs, embedder, PARAMS, LIMITS)
    w["v1"] = w["r1"].version
    w["before"] = results(store, embedder)
    w["r_again"] = store.ingest(sample_pdfs, embedder, PARAMS, LIMITS)

    voron = next(p for p in sample_pdfs if p.name.startswith("voron"))
    changed_dir = root / "changed"
    changed_dir.mkdir()
    writer = PdfWriter()
    for page in PdfReader(voron).pages[:-1]:
        writer.add_page(page)
    with open(changed_dir / voron.name, "wb") as fh:
        writer.write(fh)
    w["changed_pdf"] = changed_dir / voron.name
    w["r2"] = store.ingest([changed_dir], embedder, PARAMS, LIMITS)
    w["v2"] = w["r2"].version
    w["after_change"] = results(store, embedder)
    return w


def test_first_ingest_builds_an_active_version(world: dict, sample_pdfs: list[Path]) -> None:
    store, r1 = world["store"], world["r1"]
    assert r1.version and sorted(r1.added) == sorted(p.name for p in sample_pdfs)
    assert r1.failed == [] and r1.changed == [] and r1.pages == 21 + 18
    assert r1.chunks == r1.embedded > 0
    m = store.show(r1.version)
    assert m["parent"] is None and m["chunk_count"] == r1.chunks
    assert {x["sha256"] for x in m["manuals"]} == {sha256_file(p) for p in sample_pdfs}
    assert m["embedding"]["dim"] == 384 and len(m["embedding"]["model_hash"]) == 64
    assert m["chunker"] == PARAMS.to_dict() and m["tool"]["version"]
    assert sum(x["chunks"] for x in m["manuals"]) == m["chunk_count"]
    for pdf in sample_pdfs:  # originals are kept content-addressed
        assert store.manual_pdf(sha256_file(pdf)).read_bytes() == pdf.read_bytes()
    assert store.verify(r1.version) == []


def test_reingest_of_the_same_files_makes_no_version(world: dict, sample_pdfs: list[Path]) -> None:
    r = world["r_again"]
    assert r.version is None and r.status == "no change" and r.embedded == 0
    assert sorted(r.unchanged) == sorted(p.name for p in sample_pdfs)
    assert r.to_dict()["status"] == "no change"


def test_changed_manual_reuses_the_others_embeddings(world: dict, embedder: Any) -> None:
    store, r2, v1, v2 = world["store"], world["r2"], world["v1"], world["v2"]
    assert v2 and v2 != v1 and v2 > v1  # ids sort by age
    assert r2.changed == ["voron0_setup_guide.pdf"] and r2.added == [] and r2.pages == 17
    m2 = store.show(v2)
    assert m2["parent"] == v1 and m2["active"]
    voron2 = next(x for x in m2["manuals"] if x["file_name"].startswith("voron"))
    assert r2.embedded == voron2["chunks"]  # only the changed manual went through the model
    assert voron2["sha256"] == sha256_file(world["changed_pdf"]) and voron2["page_count"] == 17
    # noaa's vectors in v2 are exactly its vectors in v1 (re-used, not re-embedded)
    noaa = next(x["sha256"] for x in m2["manuals"] if x["file_name"].startswith("noaa"))
    old, new = store.open(v1), store.open(v2)
    a = old.vectors.reconstruct(old.chunks.rows_for_manuals([noaa]))
    b = new.vectors.reconstruct(new.chunks.rows_for_manuals([noaa]))
    assert a.shape == b.shape and np.array_equal(a, b)
    assert [c.chunk_id for c in old.chunks.chunks_for_manual(noaa)] == \
        [c.chunk_id for c in new.chunks.chunks_for_manual(noaa)]
    assert [v["id"] for v in store.list_versions()] == [v1, v2]


def test_diff_shows_the_change(world: dict) -> None:
    d = world["store"].diff(world["v1"], world["v2"])
    assert [c["file_name"] for c in d["changed"]] == ["voron0_setup_guide.pdf"]
    assert d["added"] == [] and d["removed"] == [] and d["unchanged"] == ["noaa_lcp_pistonboard_user_manual.pdf"]
    assert d["changed"][0]["old_sha256"] != d["changed"][0]["new_sha256"]
    assert not d["embedding_changed"]


def test_rollback_restores_identical_search_results(world: dict, embedder: Any) -> None:
    store, v1, v2 = world["store"], world["v1"], world["v2"]
    assert world["after_change"] != world["before"]  # the change is visible to search
    assert store.rollback() == v1 and store.active_id() == v1
    assert results(store, embedder) == world["before"]
    assert results(IndexStore(store.data_dir), embedder) == world["before"]  # a fresh process view
    with pytest.raises(RetrievalError, match="no parent"):
        store.rollback()
    assert store.rollback(to=v2) == v2
    assert results(store, embedder) == world["after_change"]
    with pytest.raises(RetrievalError, match="unknown index version"):
        store.rollback(to="v20000101T000000-abcdef")


def test_remove_builds_a_version_without_the_manual(world: dict, embedder: Any) -> None:
    store = world["store"]
    with pytest.raises(RetrievalError, match="unknown manual"):
        store.remove("no-such-manual.pdf")
    base = store.active_id()
    r = store.remove("noaa_lcp_pistonboard_user_manual.pdf")
    assert r.removed == ["noaa_lcp_pistonboard_user_manual.pdf"] and r.embedded == 0
    m = store.show(r.version)
    assert m["parent"] == base and [x["file_name"] for x in m["manuals"]] == ["voron0_setup_guide.pdf"]
    found = search(store, embedder, "firmware flash", SearchParams(k=10))
    assert {h.manual for h in found} == {"voron0_setup_guide.pdf"}
    d = store.diff(base, r.version)
    assert [x["file_name"] for x in d["removed"]] == ["noaa_lcp_pistonboard_user_manual.pdf"]
    assert store.verify(r.version) == []
    store.rollback()  # leave the walk where it was
    assert store.active_id() == base


def _copy(world: dict, name: str) -> IndexStore:
    dst = world["root"] / name / "data"
    shutil.copytree(world["store"].data_dir, dst)
    return IndexStore(dst)


@pytest.mark.parametrize("damage", ["truncate_chunks_db", "alter_vectors", "edit_manifest"])
def test_verify_detects_damage_and_activate_refuses(world: dict, damage: str) -> None:
    store = _copy(world, f"damage-{damage}")
    v1 = world["v1"]
    active = store.active_id()
    assert active != v1 and store.verify(v1) == []
    vdir = store.indexes_dir / v1
    if damage == "truncate_chunks_db":
        path = vdir / "chunks.db"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        expected = "chunks.db"
    elif damage == "alter_vectors":
        path = vdir / "vectors.faiss"
        data = bytearray(path.read_bytes())
        data[-100] ^= 0xFF  # one vector component changes; the file still loads
        path.write_bytes(bytes(data))
        expected = "vectors.faiss: sha256"
    else:
        path = vdir / "manifest.json"
        m = json.loads(path.read_text())
        m["manuals"][0]["title"] = "Edited title"
        path.write_text(json.dumps(m))
        expected = "manifest.json: digest"
    problems = store.verify(v1)
    assert any(p.startswith(expected) for p in problems), problems
    with pytest.raises(RetrievalError, match="fails verification"):
        store.activate(v1)
    with pytest.raises(RetrievalError, match="fails verification"):
        store.rollback(to=v1)
    assert store.active_id() == active and store.verify(active) == []


def test_gc_keeps_n_and_never_the_active_version_or_its_parent(world: dict) -> None:
    store = _copy(world, "gc")
    ids = [v["id"] for v in store.list_versions()]
    assert len(ids) == 3  # v1, v2 and the version made by remove
    (store.indexes_dir / ".tmp-v20000101T000000-abcdef").mkdir()  # a crashed ingest's leftover
    store.activate(ids[0])  # the oldest one, so "keep the newest" alone would delete it
    preview = store.gc(keep=1, dry_run=True)  # says what would go, removes nothing
    assert preview.removed == [ids[1]] and preview.dry_run and len(store.list_versions()) == 3
    size = sum(p.stat().st_size for p in (store.indexes_dir / ids[1]).rglob("*") if p.is_file())
    done = store.gc(keep=1)
    assert done.removed == [ids[1]] and done.kept == [ids[0], ids[2]] and not done.dry_run
    assert done.bytes_freed == preview.bytes_freed >= size > 0
    assert [v["id"] for v in store.list_versions()] == [ids[0], ids[2]]
    assert not (store.indexes_dir / ".tmp-v20000101T000000-abcdef").exists()
    store.activate(ids[2])  # its parent is ids[1], already gone: nothing else to protect
    assert store.gc(keep=1).removed == [ids[0]] and store.active_id() == ids[2]
    assert store.verify(ids[2]) == []
    # originals no version refers to any more are dropped, the active version's are kept
    kept = {x["sha256"] for x in store.show(ids[2])["manuals"]}
    assert {p.stem for p in store.manuals_dir.glob("*.pdf")} == kept
    with pytest.raises(RetrievalError):
        store.gc(keep=0)


def test_other_embedding_model_re_embeds_everything_and_says_so(world: dict, embedder: Any,
                                                                 sample_pdfs: list[Path]) -> None:
    store = _copy(world, "model")
    before = store.active_id()
    r = store.ingest(sample_pdfs, OtherModel(embedder), PARAMS, LIMITS)
    assert r.reprocessed.startswith("embedding model changed") and "0" * 12 in r.reprocessed
    m = store.show(r.version)
    assert r.embedded == m["chunk_count"] > 0 and m["embedding"]["model_hash"] == "0" * 64
    assert m["parent"] == before and store.verify(r.version) == []
    again = store.ingest(sample_pdfs, OtherModel(embedder), PARAMS, LIMITS)  # same model now: no work
    assert again.version is None and again.reprocessed == "" and again.embedded == 0
    store.activate(before)  # the old version is intact and can serve again
    assert store.verify(before) == []


def test_bad_files_fail_alone(world: dict, embedder: Any, tmp_path: Path) -> None:
    store = _copy(world, "bad")
    before = store.active_id()
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    small = tmp_path / "voron_first_pages.pdf"
    writer = PdfWriter()
    for page in PdfReader(world["changed_pdf"]).pages[:2]:
        writer.add_page(page)
    with open(small, "wb") as fh:
        writer.write(fh)
    r = store.ingest([bad, small, tmp_path / "missing.pdf"], embedder, PARAMS, LIMITS)
    assert r.added == ["voron_first_pages.pdf"] and r.version and r.parent == before
    assert sorted(Path(f).name for f, _ in r.failed) == ["broken.pdf", "missing.pdf"]
    assert all(msg for _, msg in r.failed)
    r = store.ingest([bad], embedder, PARAMS, LIMITS)
    assert r.version is None and len(r.failed) == 1


def test_open_without_index_and_unknown_version(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "empty")
    assert store.active_id() is None and store.list_versions() == []
    with pytest.raises(RetrievalError, match="no index yet: run `manualqa ingest PATH`"):
        store.open()
    with pytest.raises(RetrievalError, match="not a version id"):
        store.open("../../etc")
    with pytest.raises(RetrievalError, match="not a manual sha256"):
        store.manual_pdf("../x")
