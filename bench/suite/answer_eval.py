"""Answers on manuals nobody tuned for: `manualqa replay` on eval/dev and eval/test, before and after.

Each half is its own gateway (its manuals + the two sample manuals as distractors). A run calls the
real CLI (`manualqa ingest`, then `manualqa replay`) in a subprocess, from any checkout of the code
(``--code`` points at another worktree, e.g. the commit before this work), with the default profile
in generate mode unless a run sets MANUALQA_ANSWER__MODE. The report reads every run back from the
data directories' gateway.db and scores all of them with this checkout's metrics
(gateway.qa.metrics), so "before" and "after" are measured by the same yardstick. Runs that predate
the support check get their supported-sentence rate computed afterwards from the answer and the
passages it cited (uncited sentences count as unsupported, as the old pipeline did not check them).

    python -m bench.suite.answer_eval             # `all`: every run below on both halves, then the report
    python -m bench.suite.answer_eval run --split test --label after
    python -m bench.suite.answer_eval run --split test --label before --code /tmp/before   # or --code 01f8321
    python -m bench.suite.answer_eval report        # writes docs/bench/answer_eval.md
    # the quantity check, side by side in one code (not_found is decided before the model, so the
    # extractive mode measures it without a 30-minute generation run):
    python -m bench.suite.answer_eval run --split test --label extractive-noquantity \
        --env MANUALQA_ANSWER__MODE=extractive --env MANUALQA_ANSWER__QUANTITY_CHECK=false
    python -m bench.suite.answer_eval run --split test --label extractive --env MANUALQA_ANSWER__MODE=extractive
    python -m bench.suite.answer_eval report --labels before after extractive-noquantity extractive
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO, source_tree, write_section

WORK = Path(os.environ.get("MANUALQA_EVAL_WORK", "/tmp/manualqa-answer-eval"))
BEFORE = "01f8321"  # the code before issue 9
SPLITS = ("dev", "test", "dev2", "dev3")
ALL_SPLITS = ("dev", "test")  # what `all` runs; eval/dev2 (a second development set) is run by hand
SHOWN = ("hit_at_1", "hit_at_5", "mrr", "answer_correctness", "answered_correctness", "citation_precision",
         "supported_sentence_rate", "unsupported_numbers", "false_answer_rate", "unanswerable_not_found_rate",
         "false_refusal_rate", "ttft_ms_p50", "total_ms_p50")


def data_dir(split: str, label: str) -> Path:
    return WORK / f"{split}-{label}"


def run(split: str, label: str, code: Path, extra_env: dict[str, str]) -> None:
    """Ingest the half (and the distractors) and replay its questions with the code at `code`."""
    data = data_dir(split, label)
    data.mkdir(parents=True, exist_ok=True)
    # A generous parse timeout: on a busy 2-core box the sandboxed parser (nice 19) can starve, and a
    # manual missing from the index would make the run meaningless.
    env = {**os.environ, "MANUALQA_DATA": str(data), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(code), "MANUALQA_INGEST__TIMEOUT_S": "1200",
           # the model's path unless a run says otherwise: under answer.mode = "auto" an unqualified
           # profile would answer extractively, and "after" would silently stop measuring the model
           "MANUALQA_ANSWER__MODE": "generate", **extra_env}
    python = sys.executable
    manuals = [str(REPO / "eval" / split / "manuals"), str(REPO / "sample_manuals")]
    out = subprocess.run([python, "-m", "gateway", "ingest", *manuals, "--json"], cwd=code, env=env,
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out[out.index("{"):])
    if report.get("failed"):
        raise SystemExit(f"ingest of eval/{split} failed for {report['failed']}: the run would not be comparable")
    subprocess.run([python, "-m", "gateway", "replay", str(REPO / "eval" / split / "questions.jsonl"),
                    "--label", label], cwd=code, env=env, check=True)


def _partial_items(db: Any, split: str) -> list[dict[str, Any]]:
    """A run stopped before its end has no replay row yet: its answers, matched to the questions."""
    questions = {json.loads(line)["question"]: json.loads(line)
                 for line in (REPO / "eval" / split / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()}
    cols = {r[1] for r in db.execute("PRAGMA table_info(answers)")}
    items = []
    for ans in db.execute("SELECT * FROM answers WHERE client = 'replay' ORDER BY time"):
        q = questions.get(ans["question"])
        if q is None:
            continue
        passages = json.loads(ans["passages"])
        items.append({"question": q, "citations": json.loads(ans["citations"]),
                      "retrieved": [{"manual": p.get("manual"), "page": p.get("page")} for p in passages],
                      "result": {"outcome": ans["outcome"], "answer": ans["answer"], "mode": ans["mode"],
                                 "timings": json.loads(ans["timings"]), "citations": json.loads(ans["citations"]),
                                 "support": json.loads(ans["support"]) if "support" in cols else None}})
    return items


def _items(data: Path, label: str, split: str) -> list[dict[str, Any]]:
    """The newest run with this label, as replay_metrics items (full answer rows from the log)."""
    import sqlite3

    db = sqlite3.connect(str(data / "gateway.db"))
    db.row_factory = sqlite3.Row
    try:
        run_row = db.execute("SELECT id FROM replay_runs WHERE label = ? ORDER BY id DESC LIMIT 1",
                             [label]).fetchone()
        if run_row is None:
            return _partial_items(db, split)
    except sqlite3.OperationalError:  # a data directory whose run never started
        return []
    cols = {r[1] for r in db.execute("PRAGMA table_info(answers)")}
    items = []
    for it in db.execute("SELECT * FROM replay_items WHERE run_id = ? ORDER BY position", [run_row["id"]]):
        data_json = json.loads(it["data"])
        ans = db.execute("SELECT * FROM answers WHERE id = ?", [it["answer_id"]]).fetchone()
        result: dict[str, Any] = {"outcome": it["outcome"], "answer": it["answer"] or "",
                                  "timings": json.loads(it["timings"]), "mode": data_json.get("mode")}
        if ans is not None:
            result["citations"] = json.loads(ans["citations"])
            result["support"] = json.loads(ans["support"]) if "support" in cols else None
        items.append({"question": data_json["question"], "result": result,
                      "citations": json.loads(it["citations"]), "retrieved": json.loads(it["retrieved"])})
    return items


def _post_hoc_support(items: list[dict[str, Any]]) -> None:
    from gateway.answer.support import check_answer

    for it in items:
        r = it["result"]
        if r.get("support") is not None or r.get("outcome") != "answered" or r.get("mode") != "generate":
            continue
        by_n = {c.get("n"): c.get("passage") or "" for c in r.get("citations") or [] if not c.get("supporting")}
        passages = [by_n.get(n, "") for n in range(1, max(by_n, default=0) + 1)]
        checks = check_answer(r["answer"], passages) if passages else []
        r["support"] = [c.to_dict() for c in checks if c.cited] + [
            {"supported": False} for c in checks if not c.cited]
        if not passages:
            r["support"] = [{"supported": False}]


def report(labels: tuple[str, ...] = ("before", "after"), out: Path | None = None) -> str:
    """The table of the runs named (the section file, or `out`: a rerun kept beside the prose there)."""
    from gateway.qa.metrics import compute_metrics

    lines = ["## Answers on manuals nobody tuned for (`manualqa replay`, default profile and mode)", "",
             "Each half is a gateway holding its manuals plus the two sample manuals; `before` is the code "
             "before issue 9 (commit 01f8321), `after` this checkout. Scored by this checkout's "
             "`gateway/qa/metrics.py`. answer correctness: all gold numbers present when the gold answer "
             "has numbers, else token F1 (refusals score 0); answered correctness: the same over `answered` "
             "outcomes only; false answers: unanswerable questions given an `answered` badge.", "",
             "| run | " + " | ".join(SHOWN) + " | outcomes |", "|---|" + "---|" * (len(SHOWN) + 1)]
    for split in SPLITS:
        runs = {label: _items(data_dir(split, label), label, split) for label in labels
                if (data_dir(split, label) / "gateway.db").is_file()}
        runs = {label: items for label, items in runs.items() if items}
        # Compare on the questions every run answered (a run stopped early covers fewer).
        ids = [{it["question"]["id"] for it in items} for items in runs.values()]
        common = set.intersection(*ids) if ids else set()
        total = sum(1 for line in (REPO / "eval" / split / "questions.jsonl").read_text().splitlines() if line.strip())
        for label, items in runs.items():
            items = [it for it in items if it["question"]["id"] in common]
            _post_hoc_support(items)
            m = compute_metrics(items)
            cells = [("-" if m.get(k) is None else f"{m[k]:.3f}" if isinstance(m[k], float) else str(m[k]))
                     for k in SHOWN]
            lines.append(f"| {split} {label} ({len(items)} of {total} questions) | " + " | ".join(cells)
                         + f" | {json.dumps(m['outcomes'])} |")
    text = "\n".join(lines)
    write_section(__spec__.name, text, argv=["report", "--labels", *labels], out=out,
                  conditions="The runs: see the docstring of `bench/suite/answer_eval.py`.")
    return text


# every run the report shows: label -> (code: this checkout or a git revision, extra environment)
RUNS: dict[str, tuple[str | None, dict[str, str]]] = {
    "before": (BEFORE, {}),
    "after": (None, {}),
    "extractive-noquantity": (None, {"MANUALQA_ANSWER__MODE": "extractive",
                                     "MANUALQA_ANSWER__QUANTITY_CHECK": "false"}),
    "extractive": (None, {"MANUALQA_ANSWER__MODE": "extractive"}),
}


def run_all() -> str:
    """Every run in RUNS on both halves (the old code in a temporary worktree), then the report."""
    for label, (code, env) in RUNS.items():
        with source_tree(code or REPO) as tree:
            for split in ALL_SPLITS:
                run(split, label, tree, env)
    return report(tuple(RUNS))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    sub.add_parser("all", help="every run on both halves, then the report (the default)")
    r = sub.add_parser("run")
    r.add_argument("--split", choices=SPLITS, required=True)
    r.add_argument("--label", required=True)
    r.add_argument("--code", default=str(REPO),
                   help="checkout or git revision whose code answers (default: this one)")
    r.add_argument("--env", action="append", default=[], help="extra NAME=VALUE for the gateway")
    rp = sub.add_parser("report")
    rp.add_argument("--labels", nargs="+", default=["before", "after"], help="runs to show, in order")
    rp.add_argument("--out", type=Path, help="write here instead of docs/bench/answer_eval.md")
    args = ap.parse_args()
    if args.cmd == "run":
        with source_tree(args.code) as tree:
            run(args.split, args.label, tree, dict(e.split("=", 1) for e in args.env))
    elif args.cmd == "report":
        print(report(tuple(args.labels), args.out))
    else:
        print(run_all())


if __name__ == "__main__":
    main()
