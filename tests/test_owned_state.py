"""State a gateway holds is its own: two Services (or two apps) in one process share no cache, gate or
lock (docs/architecture.md, "Who owns what state")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.config import Settings
from gateway.services import Services


def test_two_gateways_do_not_share_the_sentence_vectors(sample_data_dir: Path, embedder: Any) -> None:
    import retrieval.sentence_rank as sentence_rank

    a = Services(Settings(data_dir=sample_data_dir), embedder=embedder)
    b = Services(Settings(data_dir=sample_data_dir), embedder=embedder)
    assert not hasattr(sentence_rank, "CACHE")  # no process-wide cache left to share
    assert a.sentence_cache is a.sentence_cache and a.sentence_cache is not b.sentence_cache
    got = a.retrieve("What voltage does the board need?", 3)
    assert got.similar is not None
    got.similar([h.text for h in got.hits])  # the evidence step embeds the passages' sentences: a's cache
    assert len(a.sentence_cache._vectors) > 0 and len(b.sentence_cache._vectors) == 0


def test_two_gateways_load_a_reranker_each(tmp_path: Path) -> None:
    import dataclasses

    settings = Settings(data_dir=tmp_path)
    settings.search = dataclasses.replace(settings.search, rerank="builtin")
    a, b = Services(settings), Services(settings)
    assert a.reranker is a.reranker  # loaded once by its gateway
    assert a.reranker is not b.reranker and a.reranker.model_hash == b.reranker.model_hash


def test_file_hashes_belong_to_their_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import retrieval.embedders.base as base

    reads: list[Path] = []
    real = base.sha256_file
    monkeypatch.setattr(base, "sha256_file", lambda p: reads.append(p) or real(p))
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"w" * 1000)
    assert not hasattr(base, "_hash_cache")
    one, two = base.FileHashes(), base.FileHashes()
    assert one.sha256(weights) == one.sha256(weights) == base.file_sha256(weights, one)
    assert len(reads) == 1  # read once by its owner
    assert two.sha256(weights) == one.sha256(weights) and len(reads) == 2  # another owner reads it itself
    assert base.file_sha256(weights) == real(weights) and len(reads) == 3  # no owner: read now


def test_two_gateways_do_not_share_the_display_titles_read(tmp_path: Path) -> None:
    from gateway.records.titles import DisplayTitles

    a, b = Services(Settings(data_dir=tmp_path)), Services(Settings(data_dir=tmp_path))
    DisplayTitles(a.settings.db_path).set("ab" * 32, "Pump P-100")
    rows = [{"sha256": "ab" * 32, "title": "about:blank"}]
    a.show_titles(rows)
    assert rows[0]["title"] == "Pump P-100"
    assert a.titles is not b.titles and a.titles._seen and not b.titles._seen  # read by a only
    b.show_titles(more := [{"sha256": "ab" * 32, "title": "about:blank"}])
    assert more[0]["title"] == "Pump P-100"  # b reads them itself


@pytest.fixture
def two_apps(tmp_path: Path, embedder: Any) -> Any:
    """Two apps in one process, each over its own Services, and an admin key that both accept."""
    from litestar.testing import TestClient

    from gateway.records.keys import KeyStore
    from gateway.web.app import create_app
    from tests.support.http import bearer

    settings = Settings(data_dir=tmp_path / "data")
    h = bearer(KeyStore(settings.db_path).create("ops", "admin"))
    one = create_app(settings, Services(settings, embedder=embedder), warm=False)
    other_settings = Settings(data_dir=tmp_path / "data")
    two = create_app(other_settings, Services(other_settings, embedder=embedder), warm=False)
    with TestClient(one, timeout=60) as a, TestClient(two, timeout=60) as b:
        yield one, two, a, b, h


def test_the_upload_gate_and_the_doctor_lock_belong_to_their_app(two_apps: Any) -> None:
    from contextlib import ExitStack

    from tests.support.http import error_of

    one, two, a, b, h = two_apps
    assert one.state.uploads is not two.state.uploads and one.state.doctor_lock is not two.state.doctor_lock
    pdf = {"data": ("m.pdf", b"not a pdf", "application/pdf")}
    with ExitStack() as held:
        for _ in range(one.state.uploads.limit):
            held.enter_context(one.state.uploads.slot())
        assert error_of(a.post("/api/v1/manuals", headers=h, files=pdf), 503)["code"] == "busy"
        assert b.post("/api/v1/manuals", headers=h, files=pdf).status_code == 415  # the other app's gate is open
    assert one.state.doctor_lock.acquire(blocking=False)
    try:
        assert error_of(a.post("/api/v1/deployment/doctor", headers=h), 409)["code"] == "conflict"
        assert not two.state.doctor_lock.locked()
    finally:
        one.state.doctor_lock.release()


def test_question_vectors_and_page_strings_belong_to_their_app(two_apps: Any) -> None:
    one, two, a, b, h = two_apps
    assert a.get("/api/v1/admin/unanswered", headers=h).status_code == 200
    assert one.state.question_vectors._by_model and not two.state.question_vectors._by_model
    assert a.get("/?lang=de").status_code == 200
    assert "de" in one.state.catalogues._read and not two.state.catalogues._read
    assert b.get("/?lang=de").text == a.get("/?lang=de").text  # the same page from its own read


def test_the_answer_mode_switch_is_its_apps_own_and_leaves_the_settings(tmp_path: Path, embedder: Any) -> None:
    """Two apps over one Settings: an admin's switch on one is that app's state; the configured mode and
    the other app stay as the configuration said."""
    from litestar.testing import TestClient

    from gateway.records.keys import KeyStore
    from gateway.web.app import create_app
    from tests.support.http import bearer

    settings = Settings(data_dir=tmp_path / "data")
    h = bearer(KeyStore(settings.db_path).create("ops", "admin"))
    one = create_app(settings, Services(settings, embedder=embedder), warm=False)
    two = create_app(settings, Services(settings, embedder=embedder), warm=False)
    with TestClient(one, timeout=60) as a, TestClient(two, timeout=60) as b:
        r = a.post("/api/v1/deployment/answer-mode", headers=h, json={"mode": "generate"})
        assert r.status_code == 200 and r.json()["previous"] == "auto"
        assert settings.answer.mode == "auto"  # the configuration is unchanged
        mine = a.get("/api/v1/deployment", headers=h).json()
        assert mine["answer_mode"] == "generate" and mine["answer_mode_configured"] == "generate"
        theirs = b.get("/api/v1/deployment", headers=h).json()
        assert theirs["answer_mode"] == "extractive" and theirs["answer_mode_configured"] == "auto"
        assert b.get("/api/v1/health").json()["answer_mode"] == "extractive"
        r = a.post("/api/v1/deployment/answer-mode", headers=h, json={"mode": "extractive"})
        assert r.json()["previous"] == "generate" and a.get("/api/v1/health").json()["answer_mode"] == "extractive"
