"""A manual's display title: set by an admin (CLI or API), shown in lists, search hits, passages and
citations across index versions; bad titles are a clear 4xx and change nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config import Settings
from gateway.records.titles import MAX_TITLE_CHARS, TitleError, clean_title
from gateway.services import Services
from tests.support.server import GatewayServer

NOAA = "noaa_lcp_pistonboard_user_manual.pdf"
QUESTION = "What input voltage range does the piston board accept?"


@pytest.mark.parametrize("bad", ["", "   ", "\x00\x07", "x" * (MAX_TITLE_CHARS + 1)])
def test_clean_title_refuses_what_a_card_cannot_show(bad: str) -> None:
    with pytest.raises(TitleError):
        clean_title(bad)


def test_clean_title_keeps_one_printable_line() -> None:
    assert clean_title("  Piston board\n manual\t(rev B) ") == "Piston board manual (rev B)"


@pytest.fixture()
def gw(sample_data_dir: Path, tmp_path: Path, embedder: Any) -> Services:
    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    g = Services(Settings(data_dir=data), embedder=embedder)
    g.settings.answer.mode = "extractive"
    yield g
    g.log.close()


def test_renamed_title_shows_everywhere_and_survives_a_new_version(gw: Services) -> None:
    pdf_title = next(h.title for h in gw.search(QUESTION) if h.manual == NOAA)
    row = gw.rename_manual(NOAA, "LCP piston board (NOAA)")
    assert row["title"] == "LCP piston board (NOAA)" and row["pdf_title"] == pdf_title
    assert {h.title for h in gw.search(QUESTION) if h.manual == NOAA} == {"LCP piston board (NOAA)"}
    res = gw.answer(QUESTION)
    assert res.citations and all(c.title == "LCP piston board (NOAA)" for c in res.citations if c.manual == NOAA)
    assert all(c["title"] == "LCP piston board (NOAA)" for c in gw.log.get(res.id)["citations"] if c["manual"] == NOAA)
    # A new index version (another manual removed) still shows the display title.
    gw.store.remove("voron0_setup_guide.pdf")
    assert {h.title for h in gw.search(QUESTION)} == {"LCP piston board (NOAA)"}
    gw.rename_manual(NOAA, None)
    assert {h.title for h in gw.search(QUESTION)} == {pdf_title}


def test_the_version_diff_names_a_manual_by_its_display_title(gw: Services, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gateway.cli import main

    voron = "voron0_setup_guide.pdf"
    before = gw.store.active_id()
    pdf_title = next(m["title"] for m in gw.store.show(before)["manuals"] if m["file_name"] == voron)
    gw.rename_manual(voron, "Voron Zero electronics")
    gw.store.remove(voron)
    after = gw.store.active_id()
    d = gw.index_diff(before, after)
    assert [(m["file_name"], m["title"], m["pdf_title"]) for m in d["removed"]] == \
        [(voron, "Voron Zero electronics", pdf_title)]
    monkeypatch.chdir(tmp_path)
    env = {"MANUALQA_DATA": str(gw.settings.data_dir), "MANUALQA_CONFIG": ""}
    out = CliRunner().invoke(main, ["index", "diff", before, after], env=env, catch_exceptions=False)
    assert out.exit_code == 0 and f"- {voron} 'Voron Zero electronics'" in out.stdout, out.output


def test_rename_of_an_unknown_manual_says_which_exist(gw: Services) -> None:
    from retrieval.types import RetrievalError

    with pytest.raises(RetrievalError, match="Known manuals"):
        gw.rename_manual("no-such-manual.pdf", "x")


def test_rename_over_http_and_the_cli(sample_data_dir: Path, tmp_path: Path) -> None:
    srv = GatewayServer(sample_data_dir, tmp_path / "srv", config="[answer]\nmode = \"extractive\"\n").start()
    try:
        admin = {"Authorization": f"Bearer {srv.admin_key()}"}
        reader = {"Authorization": f"Bearer {srv.cli('keys', 'create', 'r', '--role', 'reader').stdout.strip()}"}
        manuals = httpx.get(srv.url + "/api/v1/manuals", timeout=30).json()["manuals"]
        sha = next(m["sha256"] for m in manuals if m["file_name"] == NOAA)
        url = f"{srv.url}/api/v1/manuals/{sha}/title"
        assert httpx.put(url, json={"title": "x"}, headers=reader, timeout=30).status_code == 403
        bad = httpx.put(url, json={"title": "  "}, headers=admin, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_title"
        r = httpx.put(url, json={"title": "Piston board"}, headers=admin, timeout=30)
        assert r.status_code == 200 and r.json()["title"] == "Piston board"
        listed = {m["file_name"]: m for m in httpx.get(srv.url + "/api/v1/manuals", timeout=30).json()["manuals"]}
        assert listed[NOAA]["title"] == "Piston board" and listed[NOAA]["pdf_title"] != "Piston board"
        answer = httpx.post(srv.url + "/api/v1/ask", json={"question": QUESTION}, timeout=60).json()
        assert any(c["title"] == "Piston board" for c in answer["citations"])
        out = srv.cli("rename", NOAA, "--reset", "--json")
        assert '"pdf_title"' in out.stdout
        listed = {m["file_name"]: m for m in httpx.get(srv.url + "/api/v1/manuals", timeout=30).json()["manuals"]}
        assert listed[NOAA]["title"] != "Piston board"
        usage = srv.cli("rename", NOAA, check=False)
        assert usage.returncode == 2 and "TITLE or --reset" in usage.stderr
        # the diff over HTTP names a renamed manual by its display title too
        before = httpx.get(srv.url + "/api/v1/index/versions", headers=reader, timeout=30).json()["active"]
        assert httpx.put(url, json={"title": "Piston board"}, headers=admin, timeout=30).status_code == 200
        after = json.loads(srv.cli("remove", NOAA, "--json").stdout)["version"]
        d = httpx.get(srv.url + "/api/v1/index/diff", params={"from": before, "to": after}, headers=reader,
                      timeout=30).json()
        assert [(m["file_name"], m["title"]) for m in d["removed"]] == [(NOAA, "Piston board")]
    finally:
        srv.stop()


def test_titles_are_read_again_when_another_process_renames(tmp_path: Path) -> None:
    """Searches read display titles from a cache; a rename from the CLI (another process, another
    connection) must still show on the next search."""
    import subprocess
    import sys

    from gateway.records.db import opened
    from gateway.records.titles import TitleCache, current_titles

    db = tmp_path / "gateway.db"
    cache = TitleCache()  # a gateway's own (gateway.services.Services.titles)
    with opened(db):
        pass  # migrated, empty
    assert current_titles(db, cache) == {}
    assert current_titles(db, cache) is current_titles(db, cache)  # nothing changed: no new read
    rename = ("import sys; from gateway.records.titles import DisplayTitles; "
              "d = DisplayTitles(sys.argv[1]); d.set('ab' * 32, sys.argv[2]) if sys.argv[2] else d.clear('ab' * 32)")
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", rename, str(db), "Pump P-100"], check=True, cwd=root)
    assert current_titles(db, cache) == {"ab" * 32: "Pump P-100"}
    subprocess.run([sys.executable, "-c", rename, str(db), "Pump P-200"], check=True, cwd=root)
    assert current_titles(db, cache) == {"ab" * 32: "Pump P-200"}  # same length, same row: still seen
    subprocess.run([sys.executable, "-c", rename, str(db), ""], check=True, cwd=root)
    assert current_titles(db, cache) == {}
