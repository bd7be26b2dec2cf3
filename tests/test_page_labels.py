"""Printed page labels (/PageLabels) from the parser to the technician: parse, store, search, API.

None of the sample or eval manuals defines /PageLabels (pypdf then returns "1", "2", ...), so the
labelled manual here is the NOAA sample with labels added by pypdf's PdfWriter: page 1 "i", then
"1", "2", ... from PDF page 2 on, so that PDF page 12 is printed "11" as on the paper manual.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from ingest.labels import MAX_LABEL_CHARS, clean_label
from ingest.models import ChunkParams, ParseLimits
from ingest.pdf import extract
from ingest.sandbox import parse_pdf, read_labels
from retrieval.chunkstore import ChunkStore
from retrieval.manifest import CHUNKS_DB, MANIFEST, _digest, manifest_bytes, read_manifest, verify_version_dir
from retrieval.search import search
from retrieval.types import SearchParams, shown_label
from retrieval.versions import IndexStore
from tests.support.pdfs import stream, write_pdf

NOAA = "noaa_lcp_pistonboard_user_manual.pdf"
VORON = "voron0_setup_guide.pdf"
QUESTION = "How do I connect a USB to TTL serial adapter to see the debug console output?"


def labelled_copy(source: Path, target: Path) -> Path:
    """`source` with /PageLabels: "i" for page 1, then decimal from 1 (PDF page n printed n - 1)."""
    writer = PdfWriter(clone_from=str(source))
    writer.set_page_label(0, 0, style="/r")
    writer.set_page_label(1, len(writer.pages) - 1, style="/D", start=1)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as fh:
        writer.write(fh)
    return target


def expected_label(page: int) -> str:
    return "i" if page == 1 else str(page - 1)


def hand_made(tmp: Path, page_labels: bytes) -> Path:
    """Three pages of text whose catalog carries `page_labels` (b"" for none)."""
    text = b"BT /F1 12 Tf 72 720 Td (Replace the pump seal before the season starts.) Tj ET"
    catalog = b"<< /Type /Catalog /Pages 2 0 R " + page_labels + b" >>"
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 6 0 R "
            b"/Resources << /Font << /F1 7 0 R >> >> >>")
    path = tmp / "hand.pdf"
    path.write_bytes(write_pdf([catalog, b"<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>",
                                page, page, page, stream(text),
                                b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]))
    return path


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> Path:
    return labelled_copy(sample_dir / NOAA, tmp_path_factory.mktemp("labelled") / NOAA)


# -- the parser ------------------------------------------------------------------------------------
def test_parser_reads_printed_labels_in_the_sandbox(labelled: Path) -> None:
    parsed = parse_pdf(labelled)
    assert [p.label for p in parsed.pages] == [expected_label(p.number) for p in parsed.pages]
    assert parsed.pages[11].number == 12 and parsed.pages[11].label == "11"
    assert read_labels(labelled) == [p.label for p in parsed.pages]  # the labels-only worker agrees


def test_pdf_without_page_labels_gives_none(sample_dir: Path) -> None:
    parsed = parse_pdf(sample_dir / VORON)
    assert parsed.pages and all(p.label is None for p in parsed.pages)  # not pypdf's made-up "1", "2"
    assert read_labels(sample_dir / NOAA) == [None] * 21


def test_styles_prefixes_and_hostile_labels(tmp_path: Path) -> None:
    long = b"X" * 100
    nums = (b"/PageLabels << /Nums [0 << /S /A /P (App. ) >> 1 << /S /D /St 7 /P (\\007Part\\nB-) >> "
            b"2 << /P (" + long + b") >> ] >>")
    got = extract(hand_made(tmp_path, nums), max_pages=10)
    labels = [label for _n, _text, label in got["pages"]]
    assert labels == ["App. A", "Part B-7", "X" * MAX_LABEL_CHARS]


def test_broken_page_labels_do_not_fail_the_parse(tmp_path: Path) -> None:
    got = extract(hand_made(tmp_path, b"/PageLabels << /Nums 12 >>"), max_pages=10)
    assert len(got["pages"]) == 3
    assert all(shown_label(label, n) is None for n, _text, label in got["pages"])


def test_label_helpers() -> None:
    assert clean_label(" \x00 iv\t") == "iv" and clean_label("\x07") is None and clean_label(None) is None
    assert shown_label("11", 12) == "11"
    assert shown_label("12", 12) is None and shown_label(None, 3) is None and shown_label("", 3) is None


# -- the chunk store of a version written before labels were kept ------------------------------------
OLD_SCHEMA = """
CREATE TABLE manuals (sha256 TEXT PRIMARY KEY, file_name TEXT NOT NULL, title TEXT NOT NULL,
    page_count INT NOT NULL, size_bytes INT NOT NULL, pages_without_text TEXT NOT NULL DEFAULT '[]');
CREATE TABLE pages (manual_sha256 TEXT NOT NULL, page INT NOT NULL, text TEXT NOT NULL,
    PRIMARY KEY (manual_sha256, page));
CREATE TABLE chunks (row INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, manual_sha256 TEXT NOT NULL,
    page INT NOT NULL, ordinal INT NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE chunks_fts USING fts5(heading, text, content='',
    tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO manuals VALUES ('aa', 'pump.pdf', 'Pump Manual', 2, 10, '[]');
INSERT INTO pages VALUES ('aa', 1, 'cover'), ('aa', 2, 'replace the seal');
INSERT INTO chunks VALUES (0, 'c0', 'aa', 2, 0, 'Seals', 'replace the seal');
INSERT INTO chunks_fts(rowid, heading, text) VALUES (0, 'Seals', 'replace the seal');
"""


def test_old_schema_store_reads_without_labels(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "chunks.db")
    db.executescript(OLD_SCHEMA)
    db.close()
    store = ChunkStore(tmp_path / "chunks.db", readonly=True)
    assert not store.has_labels and store.page_labels("aa") == {}
    row = store.get_rows([0])[0]
    assert row["page"] == 2 and row["page_label"] is None and row["text"] == "replace the seal"
    assert store.lexical("seal", 5) and store.page_text("aa", 2) == "replace the seal"


def drop_label_column(version_dir: Path) -> None:
    """Turn a version into one written before labels were kept, manifest checksums included."""
    db = sqlite3.connect(version_dir / CHUNKS_DB)
    db.executescript("""
        CREATE TABLE pages_old (manual_sha256 TEXT NOT NULL, page INT NOT NULL, text TEXT NOT NULL,
                                PRIMARY KEY (manual_sha256, page));
        INSERT INTO pages_old SELECT manual_sha256, page, text FROM pages;
        DROP TABLE pages;
        ALTER TABLE pages_old RENAME TO pages;
        VACUUM;""")
    db.close()
    from ingest.discover import sha256_file

    manifest = read_manifest(version_dir)
    path = version_dir / CHUNKS_DB
    manifest["files"][CHUNKS_DB] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    manifest["digest"] = _digest(manifest)
    (version_dir / MANIFEST).write_bytes(manifest_bytes(manifest))


def noaa_hits(store: IndexStore, embedder: Any, version: str | None = None) -> list[Any]:
    hits = search(store, embedder, QUESTION, SearchParams(k=8), version=version)
    found = [h for h in hits if h.manual == NOAA]
    assert found, [(h.manual, h.page) for h in hits]
    return found


# -- search, re-use and the API on real versions --------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, labelled: Path, sample_dir: Path, embedder: Any) -> dict:
    """v1: the labelled NOAA manual, then made old-schema; v2: voron0 added (NOAA re-used)."""
    data = tmp_path_factory.mktemp("labels-world") / "data"
    store = IndexStore(data)
    w: dict[str, Any] = {"data": data}
    w["v1"] = store.ingest([labelled], embedder, ChunkParams(), ParseLimits()).version
    w["v1_hits"] = noaa_hits(store, embedder)
    drop_label_column(data / "indexes" / w["v1"])
    w["old_store"] = IndexStore(data)  # a fresh store: versions are cached once opened
    w["v1_old_hits"] = noaa_hits(w["old_store"], embedder)
    w["v1_problems"] = verify_version_dir(data / "indexes" / w["v1"], w["v1"])
    voron = tmp_path_factory.mktemp("voron") / VORON
    shutil.copy(sample_dir / VORON, voron)
    report = w["old_store"].ingest([voron], embedder, ChunkParams(), ParseLimits())
    w["v2"], w["report"] = report.version, report
    return w


@pytest.mark.slow  # the real embedding model
def test_search_hits_carry_the_printed_label(world: dict) -> None:
    for hit in world["v1_hits"]:
        assert hit.page_label == expected_label(hit.page), (hit.page, hit.page_label)
        assert hit.to_dict()["page_label"] == hit.page_label


@pytest.mark.slow  # the real embedding model
def test_old_schema_version_is_still_searchable_without_labels(world: dict) -> None:
    assert world["v1_problems"] == []
    old = world["v1_old_hits"]
    assert [(h.chunk_id, h.page) for h in old] == [(h.chunk_id, h.page) for h in world["v1_hits"]]
    assert all(h.page_label is None for h in old)


@pytest.mark.slow  # the real embedding model
def test_manuals_reused_from_an_old_version_get_their_labels_again(world: dict, embedder: Any) -> None:
    assert world["report"].added == [VORON] and world["report"].embedded > 0
    store = IndexStore(world["data"])
    assert store.open(world["v2"]).chunks.has_labels
    hits = search(store, embedder, QUESTION, SearchParams(k=10), version=world["v2"])
    assert any(h.manual == NOAA for h in hits) and any(h.manual == VORON for h in hits)
    for hit in hits:
        assert hit.page_label == (expected_label(hit.page) if hit.manual == NOAA else None), hit


@pytest.mark.slow  # the real embedding model
def test_removing_a_manual_keeps_the_labels_of_the_others(world: dict, embedder: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(world["data"], data)
    store = IndexStore(data)
    store.activate(world["v2"])
    version = store.remove(VORON).version
    for hit in noaa_hits(IndexStore(data), embedder, version):
        assert hit.page_label == expected_label(hit.page)


@pytest.mark.slow  # the real embedding model
def test_api_search_and_ask_carry_page_label(world: dict, embedder: Any, tmp_path: Path) -> None:
    from litestar.testing import TestClient

    from gateway.config import AnswerSettings, Settings
    from gateway.services import Services
    from gateway.web.app import create_app

    data = tmp_path / "data"
    shutil.copytree(world["data"], data, ignore=shutil.ignore_patterns("gateway.db*"))
    IndexStore(data).activate(world["v2"])
    settings = Settings(data_dir=data, answer=AnswerSettings(mode="extractive"))
    services = Services(settings, embedder=embedder)
    with TestClient(create_app(settings, services, warm=False)) as client:
        r = client.post("/api/v1/search", json={"query": QUESTION, "k": 8, "manuals": [NOAA]})
        assert r.status_code == 200, r.text
        hits = r.json()["hits"]
        assert hits and all(h["page_label"] == expected_label(h["page"]) for h in hits)
        r = client.post("/api/v1/ask", json={"question": QUESTION, "manuals": [NOAA], "mode": "extractive"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["citations"], body
        for c in body["citations"]:
            assert c["page_label"] == expected_label(c["page"])
            assert c["pdf_url"].endswith(f"#page={c['page']}")  # the link still opens the PDF page
        assert all(p["page_label"] == expected_label(p["page"]) for p in body["passages"])
        assert services.log.flush()
        logged = services.log.get(body["id"])  # the answer log keeps it in the citations' JSON
        assert logged and [c["page_label"] for c in logged["citations"]] == [
            c["page_label"] for c in body["citations"]]


def test_openai_sources_footer_names_the_printed_page() -> None:
    from gateway.web.routes_openai import sources_footer

    footer = sources_footer([{"n": 1, "title": "LCP", "page": 12, "page_label": "11"},
                             {"n": 2, "title": "Voron", "page": 3, "page_label": None}])
    assert footer.splitlines()[-2:] == ["[1] LCP p.12 (printed 11)", "[2] Voron p.3"]
