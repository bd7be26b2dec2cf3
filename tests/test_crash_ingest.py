"""kill -9 in the middle of `manualqa ingest`: the previous version stays active and intact.

The ingest runs as a real subprocess (`manualqa ingest`, via gateway.cli.main); MANUALQA_TEST_PAUSE_AT makes
it stop at a chosen stage of building the new version, where it is killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ingest.models import ChunkParams, ParseLimits
from retrieval.search import search
from retrieval.types import SearchParams
from retrieval.versions import IndexStore

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = ["How do I flash the firmware?", "power supply voltage"]
CLI = "import sys; from gateway.cli import main; sys.argv[0] = \"manualqa\"; main()"


def results(store: IndexStore, embedder: Any) -> list[list[tuple]]:
    return [[(h.chunk_id, h.page, h.score, h.dense_score) for h in search(store, embedder, q, SearchParams(k=5))]
            for q in QUESTIONS]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, sample_pdfs: list[Path], embedder: Any) -> dict:
    data = tmp_path_factory.mktemp("crash") / "data"
    store = IndexStore(data)
    noaa = next(p for p in sample_pdfs if p.name.startswith("noaa"))
    report = store.ingest([noaa], embedder, ChunkParams(), ParseLimits())
    return {"data": data, "v1": report.version, "results": results(store, embedder)}


def _ingest_and_kill(data: Path, pdf: Path, stage: str, log: Path) -> None:
    env = dict(os.environ, MANUALQA_DATA=str(data), MANUALQA_TEST_PAUSE_AT=stage, HF_HUB_OFFLINE="1")
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", CLI, "ingest", "--json", str(pdf)],
                                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while f"MANUALQA_PAUSED {stage}" not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                pytest.fail(f"ingest exited ({proc.returncode}) before {stage}: {log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"ingest did not reach {stage} in time")
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the session we started: the ingest and its children
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["after_vectors", "before_activate"])
def test_kill_during_ingest_keeps_previous_version(base: dict, stage: str, sample_pdfs: list[Path],
                                                   embedder: Any, tmp_path: Path) -> None:
    data, v1 = base["data"], base["v1"]
    store = IndexStore(data)
    before = store.active_id()
    ids_before = {v["id"] for v in store.list_versions()}
    voron = next(p for p in sample_pdfs if p.name.startswith("voron"))
    _ingest_and_kill(data, voron, stage, tmp_path / "stderr.log")

    fresh = IndexStore(data)  # what the next process sees
    assert fresh.active_id() == before
    assert fresh.verify(before) == []
    assert fresh.open().id == before
    if before == v1:
        assert results(fresh, embedder) == base["results"]
    leftovers = [p.name for p in fresh.indexes_dir.iterdir() if p.name.startswith(".tmp-")]
    new = [v for v in fresh.list_versions() if v["id"] not in ids_before]
    if stage == "after_vectors":  # killed mid-build: only a temporary directory, never a version
        assert leftovers and new == []
    else:  # complete on disk but never activated: listed, inactive, and sound
        assert len(new) == 1 and not new[0]["active"] and new[0]["parent"] == before
        assert fresh.verify(new[0]["id"]) == []

    # a garbage pointer temp (as a kill during the pointer write would leave) is ignored too
    (data / ".tmp-ACTIVE.99999").write_text("garbage")
    assert IndexStore(data).active_id() == before

    report = fresh.ingest([voron], embedder, ChunkParams(), ParseLimits())
    assert report.version and report.added == [voron.name] and report.parent == before
    assert fresh.active_id() == report.version and fresh.verify(report.version) == []
    assert not [p for p in fresh.indexes_dir.iterdir() if p.name.startswith(".tmp-")]
    assert not (data / ".tmp-ACTIVE.99999").exists()
    assert {m["file_name"] for m in fresh.show()["manuals"]} == {voron.name,
                                                                 "noaa_lcp_pistonboard_user_manual.pdf"}
    fresh.rollback(to=v1)  # the next parametrised case starts from v1 again
    assert results(IndexStore(data), embedder) == base["results"]
