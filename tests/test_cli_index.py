"""`manualqa ingest / remove / index ... / search` through click's runner, on a real data directory.

The runner builds a fresh Gateway per invocation, as the real CLI does; the embedding model is the
session's one (patched in) so it loads once for the module instead of once per command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gateway.cli import main


@pytest.fixture()
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> Any:
    import retrieval.embedders

    monkeypatch.setattr(retrieval.embedders, "load_embedder", lambda *a, **k: embedder)
    monkeypatch.chdir(tmp_path)  # no stray manualqa.toml
    runner = CliRunner()
    env = {"MANUALQA_DATA": str(tmp_path / "data"), "MANUALQA_CONFIG": ""}

    def invoke(*args: str) -> Result:
        return runner.invoke(main, list(args), env=env, catch_exceptions=False)

    return invoke


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def test_search_before_any_ingest_is_a_clear_error(run: Any) -> None:
    r = run("search", "firmware")
    assert r.exit_code == 1 and "no index yet: run `manualqa ingest PATH`" in r.stderr
    assert "Traceback" not in r.output
    r = run("index", "list")
    assert r.exit_code == 0 and "no index yet" in r.stdout
    r = run("index", "verify")
    assert r.exit_code == 1 and "no index yet" in r.stderr


def test_cli_walk(run: Any, sample_dir: Path, sample_pdfs: list[Path], tmp_path: Path) -> None:
    report = _json(run("ingest", str(sample_dir), "--json"))
    assert report["status"] == "new version" and sorted(report["added"]) == sorted(p.name for p in sample_pdfs)
    v1 = report["version"]

    r = run("ingest", *map(str, sample_pdfs))
    assert r.exit_code == 0 and "no change" in r.stdout and "unchanged" in r.stdout

    versions = _json(run("index", "list", "--json"))
    assert [(v["id"], v["active"], v["manuals"]) for v in versions] == [(v1, True, 2)]
    assert v1 in run("index", "list").stdout
    shown = _json(run("index", "show", v1, "--json"))
    assert shown["chunk_count"] == report["chunks"]
    # every chunk's sentence vectors were stored by the ingest (retrieval.sentence_rank)
    assert shown["sentence_rank"] == {"weight": 4.0, "pool": 20, "term_weight": 3.0,
                                     "stored_chunks": report["chunks"]}
    shown_text = run("index", "show").stdout
    assert f"vectors stored for {report['chunks']} of {report['chunks']} chunks" in shown_text
    assert "by best sentence x 4.0 + question words held x 3.0" in shown_text
    assert run("index", "verify").stdout.strip() == f"{v1}: ok"
    assert _json(run("index", "verify", "--json"))["ok"] is True

    found = _json(run("search", "How do I flash the firmware?", "--k", "3", "--json"))
    assert found["version"] == v1 and len(found["hits"]) == 3
    assert {"chunk_id", "manual", "title", "page", "heading", "text", "score"} <= found["hits"][0].keys()
    scoped = _json(run("search", "firmware", "--manual", "voron0_setup_guide.pdf", "--json"))
    assert scoped["hits"] and {h["manual"] for h in scoped["hits"]} == {"voron0_setup_guide.pdf"}
    human = run("search", "flash the firmware", "--k", "2")
    lines = human.stdout.splitlines()
    assert human.exit_code == 0 and lines[0].startswith("1. ") and " p." in lines[0] and "score" in lines[0]
    assert len(lines) == 4 and all(len(line) <= 220 for line in lines[1::2])
    r = run("search", "firmware", "--manual", "nope.pdf")
    assert r.exit_code == 1 and "unknown manual" in r.stderr and "Traceback" not in r.output

    removed = _json(run("remove", "voron0_setup_guide.pdf", "--json"))
    v2 = removed["version"]
    assert removed["removed"] == ["voron0_setup_guide.pdf"] and v2 != v1
    d = _json(run("index", "diff", v1, v2, "--json"))
    assert [m["file_name"] for m in d["removed"]] == ["voron0_setup_guide.pdf"]
    assert "- voron0_setup_guide.pdf" in run("index", "diff", v1, v2).stdout
    assert _json(run("search", "firmware", "--version", v1, "--json"))["version"] == v1

    assert _json(run("index", "rollback", "--json")) == {"previous": v2, "active": v1}
    assert _json(run("index", "activate", v2, "--json")) == {"active": v2}
    r = run("index", "activate", "v20000101T000000-abcdef")
    assert r.exit_code == 1 and "unknown index version" in r.stderr
    gc = _json(run("index", "gc", "--keep", "1", "--json"))
    assert gc["removed"] == [] and gc["bytes_freed"] == 0 and gc["kept"] == [v1, v2]  # v1 is v2's parent
    r = run("index", "gc", "--keep", "0")
    assert r.exit_code == 2

    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"not a pdf at all")
    r = run("ingest", str(bad))
    assert r.exit_code == 1 and "FAILED" in r.stderr and "bad.pdf" in r.stderr
    r = run("ingest", str(bad), "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["failed"][0]["file"] == str(bad)
    r = run("ingest", str(bad), *map(str, sample_pdfs))  # some files fine: exit 0, failure still told
    assert r.exit_code == 0 and "bad.pdf" in r.stderr and "added" in r.stdout
