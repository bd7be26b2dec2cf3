"""QA replay and the upgrade gate, on the real sample index (extractive mode: deterministic, no LLM)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.config import Settings
from gateway.qa.compare import DEFAULT_GATE, GateError, compare_runs, load_gate
from gateway.qa.metrics import compute_metrics, correctness, percentile
from gateway.qa.replay import ReplayError, get_run, list_runs, load_questions, local_answerer, run_replay
from gateway.qa.report import render_report
from gateway.services import Services


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, sample_data_dir: Path, embedder: Any) -> Services:
    data = tmp_path_factory.mktemp("replay") / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    settings = Settings(data_dir=data)
    settings.answer.mode = "extractive"
    gateway = Services(settings, embedder=embedder)
    return gateway


@pytest.fixture(scope="module")
def qfile(tmp_path_factory: pytest.TempPathFactory, questions: list[dict[str, Any]]) -> Path:
    """A subset across both manuals and the unanswerable set, plus lines replay must report."""
    pick = [q for q in questions if q["id"].startswith("voron")][:6]
    pick += [q for q in questions if q["id"].startswith("lcp")][:6]
    pick += [q for q in questions if not q["answerable"]][:3]
    path = tmp_path_factory.mktemp("q") / "questions.jsonl"
    lines = [json.dumps({**q, "extra_field": "ignored"}) for q in pick]
    lines.insert(2, "{not json")
    lines.insert(5, json.dumps({"id": "", "question": "no id"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_questions_reports_bad_lines_with_numbers(qfile: Path) -> None:
    qs = load_questions(qfile)
    assert len(qs.questions) == 15
    assert any(p.startswith("line 3:") and "not JSON" in p for p in qs.problems)
    assert any(p.startswith("line 6:") and "id" in p for p in qs.problems)
    assert qs.questions[0]["extra_field"] == "ignored"  # unknown fields are carried, not fatal


def test_load_questions_refuses_a_file_with_nothing_usable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n\n{oops\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="no usable question"):
        load_questions(bad)
    with pytest.raises(ReplayError, match="not found"):
        load_questions(tmp_path / "missing.jsonl")


def test_metrics_on_hand_made_items() -> None:
    q = {"id": "a", "question": "x", "manual": "m.pdf", "pages": [3], "answerable": True, "answer": ""}
    none = {"id": "b", "question": "y", "manual": None, "pages": [], "answerable": False, "answer": ""}
    items = [
        {"question": q, "result": {"outcome": "answered", "timings": {"total_ms": 10}},
         "citations": [{"manual": "m.pdf", "page": 3}, {"manual": "m.pdf", "page": 9}],
         "retrieved": [{"manual": "m.pdf", "page": 9}, {"manual": "m.pdf", "page": 3}]},
        {"question": none, "result": {"outcome": "answered", "timings": {"total_ms": 30}},
         "citations": [], "retrieved": []},
    ]
    m = compute_metrics(items)
    assert (m["hit_at_1"], m["hit_at_5"], m["mrr"]) == (0.0, 1.0, 0.5)
    assert m["citation_precision"] == 0.5 and m["citation_coverage"] == 1.0
    assert m["false_answer_rate"] == 1.0 and m["false_refusal_rate"] == 0.0
    assert percentile([10, 30], 50) == 20.0


def test_percentile_conventions() -> None:
    """The one percentile: linear for replay metrics, nearest and floor for the bench scripts' figures."""
    vals = [float(v) for v in range(1, 21)]  # 1..20
    assert percentile(vals, 95) == 19.05
    assert percentile(vals, 95, method="nearest") == 19.0  # index round(0.95 * 19) = 18
    assert percentile(vals, 95, method="floor") == 20.0  # index int(0.95 * 20) = 19
    assert percentile([3.0, None, 1.0], 50) == 2.0  # type: ignore[list-item]
    assert percentile([], 50, method="nearest") is None


def test_answer_correctness_and_support_metrics() -> None:
    assert correctness("Tighten to 85 N·m [1].", "85 N·m in a cross pattern") == 1.0
    assert correctness("Tighten to 2.10 Nm [1].", "85 N·m") == 0.0  # numbers must match exactly
    assert 0.0 < correctness("Use the paper test under the nozzle.", "Adjust each screw with a paper test") < 1.0

    def item(answerable: bool, outcome: str, answer: str, gold: str, passage: str = "",
             support: list | None = None) -> dict[str, Any]:
        q = {"id": "q", "question": "?", "manual": "m.pdf" if answerable else None,
             "pages": [1] if answerable else [], "answerable": answerable, "answer": gold}
        return {"question": q, "citations": [], "retrieved": [],
                "result": {"outcome": outcome, "mode": "generate", "answer": answer, "timings": {},
                           "citations": [{"passage": passage}], "support": support or []}}

    items = [item(True, "answered", "Tighten to 85 N·m [1].", "85 N·m", "torque 85 N·m",
                  [{"supported": True}, {"supported": False}]),
             item(True, "answered", "Use 12 V [1].", "24 V", "supply 24 V", [{"supported": True}]),
             item(True, "not_found", "", "24 V"),
             item(False, "evidence_only", "Quoted [1].", "")]
    m = compute_metrics(items)
    assert m["answer_correctness"] == round(1 / 3, 4) and m["answered_correctness"] == 0.5
    assert m["supported_sentence_rate"] == round(2 / 3, 4)
    assert m["unsupported_numbers"] == 1  # "12" is in no cited passage
    assert m["false_answer_rate"] == 0.0 and m["false_refusal_rate"] == round(1 / 3, 4)


def _replay(gw: Services, qfile: Path, label: str, version: str | None = None) -> dict[str, Any]:
    return run_replay(local_answerer(gw, version=version), load_questions(qfile), gw.settings.db_path,
                      label=label, source=str(qfile), embed=gw.embedder.encode)


def test_replay_same_deployment_twice_passes_the_gate(gw: Services, qfile: Path) -> None:
    a = _replay(gw, qfile, "base")
    b = _replay(gw, qfile, "again")
    assert b["metrics"]["hit_at_5"] == a["metrics"]["hit_at_5"]
    assert a["metrics"]["questions"] == 15 and a["skipped_lines"]
    assert a["deployment"]["index_version"] == gw.store.active_id()
    assert a["metrics"]["hit_at_5"] is not None and a["metrics"]["hit_at_5"] >= 0.8
    assert a["metrics"]["answer_similarity"] is not None
    cmp = compare_runs(get_run(gw.settings.db_path, "base"), get_run(gw.settings.db_path, "again"))
    assert cmp.changed == []
    assert cmp.passed, cmp.violations
    assert {r["label"] for r in list_runs(gw.settings.db_path)} >= {"base", "again"}


def test_degraded_index_fails_the_gate_and_report_shows_it(gw: Services, qfile: Path, tmp_path: Path) -> None:
    base_version = gw.store.active_id()
    report = gw.store.remove("voron0_setup_guide.pdf")
    worse = report.version
    assert worse and worse != base_version
    try:
        _replay(gw, qfile, "full", version=base_version)
        _replay(gw, qfile, "no-voron", version=worse)
    finally:
        gw.store.activate(base_version)
    cmp = compare_runs(get_run(gw.settings.db_path, "full"), get_run(gw.settings.db_path, "no-voron"))
    assert not cmp.passed
    assert any("hit_at_5 dropped" in v for v in cmp.violations)
    assert any("lost their gold citation" in v for v in cmp.violations)
    changed_ids = {c["question_id"] for c in cmp.changed}
    assert any(i.startswith("voron") for i in changed_ids)
    html = render_report(cmp)
    assert "GATE FAILED" in html and "<svg" in html and "voron-" in html
    assert not re.search(r"(src|href)=\"https?://", html)  # self-contained: nothing fetched

    runner = CliRunner()
    env = {"MANUALQA_DATA": str(gw.settings.data_dir)}
    out = tmp_path / "report.html"
    res = runner.invoke(main, ["replay", "compare", "full", "no-voron", "--report", str(out)], env=env)
    assert res.exit_code == 1, res.output
    assert "GATE FAILED" in res.output and out.is_file()
    res = runner.invoke(main, ["replay", "compare", "full", "full", "--json"], env=env)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["gate"]["passed"] is True


def test_gate_file_is_validated(tmp_path: Path) -> None:
    good = tmp_path / "gate.toml"
    good.write_text("lost_gold_citation = false\n[metrics.hit_at_1]\nmax_drop = 0.1\n", encoding="utf-8")
    assert load_gate(good)["metrics"] == {"hit_at_1": {"max_drop": 0.1}}
    assert load_gate(None) is DEFAULT_GATE
    bad = tmp_path / "bad.toml"
    bad.write_text("[metrics.speediness]\nmax_drop = 1\n", encoding="utf-8")
    with pytest.raises(GateError, match="unknown metric"):
        load_gate(bad)


def test_cli_replay_list_and_unknown_run(gw: Services) -> None:
    runner = CliRunner()
    env = {"MANUALQA_DATA": str(gw.settings.data_dir)}
    res = runner.invoke(main, ["replay", "show", "no-such-run"], env=env)
    assert res.exit_code != 0 and "no replay run" in res.output
    res = runner.invoke(main, ["replay", "list", "--json"], env=env)
    assert res.exit_code == 0
    assert isinstance(json.loads(res.output), list)


def test_one_registry_names_every_metric_a_run_computes() -> None:
    """The gate, the report, `replay run` and `bench` read one list; a new metric cannot be half-added."""
    from gateway.qa.metrics import METRICS

    computed = set(compute_metrics([]))
    registered = {m.name for m in METRICS}
    counts = {"answerable", "unanswerable", "questions", "outcomes"}  # counts, not metrics to gate on
    assert computed - counts == registered - {"peak_rss_mb"}  # peak RSS is added by the replay runner
    assert all(m.label and m.group for m in METRICS) and len(registered) == len(METRICS)
