"""Answer quality on sample_manuals/questions.jsonl, and the calibration of answer.min_similarity.

    python -m bench.experiments.answer_quality [--data DIR] [--limit N] [--no-generate]

1. Builds an index of sample_manuals (in a temporary data directory unless --data is given).
2. Calibrates the evidence threshold: for each question the retrieval's best cosine and whether
   dense and lexical agree; the chosen threshold is the highest one that still keeps 90 % of the
   answerable questions (false refusals <= 10 %), which maximises the unanswerable ones refused
   under that cap. The table also shows balanced accuracy.
3. Runs every question through the answer pipeline with that threshold, in extractive mode and
   with the default model (SmolLM2-135M Q4_1 on llama.cpp): citation precision (cited pages that
   are gold pages, over answerable questions), the share of answerable questions answered with at
   least one gold citation, and the share of unanswerable questions that end not_found.
Prints Markdown (for docs/bench/experiments/answer_quality.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.harness import REPO, machine_markdown
from bench.suite.retrieval_quality import load_questions
from gateway.qa.metrics import gold_pages

MIN_KEPT = 0.90  # calibration: at most 10 % false refusals on the answerable questions


def calibrate(gw: Any, questions: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]], list[str]]:
    from gateway.answer.evidence_strength import AGREE_RELIEF, evidence_is_strong
    from gateway.answer.pipeline import retrieve_for_answer

    evidence = []
    deps = gw.answer_deps()
    for q in questions:
        hits = retrieve_for_answer(deps, q["question"], None, None).hits
        _, ev = evidence_is_strong(hits, 1.0)
        evidence.append((q["answerable"], hits))
    grid = [round(0.20 + 0.025 * i, 3) for i in range(17)]
    rows = []
    for t in grid:
        kept = [evidence_is_strong(h, t)[0] for a, h in evidence if a]
        refused = [not evidence_is_strong(h, t)[0] for a, h in evidence if not a]
        tpr, tnr = sum(kept) / len(kept), sum(refused) / len(refused)
        rows.append({"threshold": t, "answerable_kept": tpr, "unanswerable_refused": tnr,
                     "balanced": (tpr + tnr) / 2})
    # A technician who is told "not in the manuals" for a question the manuals do answer is worse off
    # than one shown a weak answer with its cited pages, so false refusals are capped first:
    # the highest threshold that still keeps MIN_KEPT of the answerable questions.
    best = max((r for r in rows if r["answerable_kept"] >= MIN_KEPT), key=lambda r: r["threshold"])
    bests = sorted((max((h.dense_score or 0) for h in hits), a) for a, hits in evidence)
    lines = [f"Best cosine per question: answerable median "
             f"{statistics.median([b for b, a in bests if a]):.3f} (min {min(b for b, a in bests if a):.3f}); "
             f"unanswerable median {statistics.median([b for b, a in bests if not a]):.3f} "
             f"(max {max(b for b, a in bests if not a):.3f}). Agreement relief: {AGREE_RELIEF}.", "",
             "| min_similarity | answerable kept | unanswerable refused | balanced |", "|---|---|---|---|"]
    for r in rows:
        mark = " **(chosen)**" if r is best else ""
        lines.append(f"| {r['threshold']:.3f}{mark} | {r['answerable_kept']:.3f} | "
                     f"{r['unanswerable_refused']:.3f} | {r['balanced']:.3f} |")
    return best["threshold"], rows, lines


def score(gw: Any, questions: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    cited = cited_gold = 0
    answerable = covered = refused_ok = unanswerable = false_refusals = no_valid = 0
    outcomes: dict[str, int] = {}
    totals, ttfts = [], []
    for q in questions:
        res = gw.answer(q["question"], mode=mode, client="replay")
        outcomes[res.outcome] = outcomes.get(res.outcome, 0) + 1
        totals.append(res.timings.get("total_ms", 0))
        if res.timings.get("ttft_ms"):
            ttfts.append(res.timings["ttft_ms"])
        real = [c for c in res.citations if not c.supporting]
        if "no_valid_citation" in res.flags and res.outcome == "answered":
            no_valid += 1
        if q["answerable"]:
            answerable += 1
            if res.outcome == "not_found":
                false_refusals += 1
            pages = {(c.manual, c.page) for c in real}
            cited += len(pages)
            hits = pages & gold_pages(q)
            cited_gold += len(hits)
            covered += bool(hits) and res.outcome == "answered"
        else:
            unanswerable += 1
            refused_ok += res.outcome == "not_found"
    return {"mode": mode, "questions": len(questions), "outcomes": outcomes,
            "citation_precision": cited_gold / cited if cited else 0.0,
            "answerable_with_gold_citation": covered / answerable if answerable else 0.0,
            "unanswerable_not_found": refused_ok / unanswerable if unanswerable else 0.0,
            "false_refusals": false_refusals / answerable if answerable else 0.0,
            "answered_without_valid_citation": no_valid,
            "total_ms_p50": statistics.median(totals), "ttft_ms_p50": statistics.median(ttfts) if ttfts else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=None, help="data dir with an index of sample_manuals")
    ap.add_argument("--questions", type=Path, default=REPO / "sample_manuals" / "questions.jsonl")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
    ap.add_argument("--no-generate", action="store_true", help="skip the default-model run")
    ap.add_argument("--generate-limit", type=int, default=0,
                    help="default-model run on a stratified subset of N questions (0: all)")
    args = ap.parse_args()

    from gateway.config import Settings
    from gateway.services import Services

    questions = load_questions(args.questions)
    if args.limit:
        answerable = [q for q in questions if q["answerable"]][: args.limit]
        questions = answerable + [q for q in questions if not q["answerable"]][: max(2, args.limit // 6)]
    tmp = None
    data = args.data
    if data is None:
        tmp = tempfile.TemporaryDirectory(prefix="mqa-bench-")
        data = Path(tmp.name) / "data"
    gw = Services(Settings(data_dir=data))
    if gw.store.active_id() is None:
        gw.ingest(sorted((REPO / "sample_manuals").glob("*.pdf")))
    threshold, _, cal_lines = calibrate(gw, questions)
    gw.settings.answer.min_similarity = threshold
    results = [score(gw, questions, "extractive")]
    if not args.no_generate:
        t = time.perf_counter()
        _ = gw.runtime
        load_s = time.perf_counter() - t
        subset = questions
        if args.generate_limit:  # every k-th answerable and every k-th unanswerable question
            ans = [q for q in questions if q["answerable"]]
            una = [q for q in questions if not q["answerable"]]
            n_una = max(2, round(args.generate_limit * len(una) / len(questions)))
            n_ans = args.generate_limit - n_una
            subset = ans[:: max(1, len(ans) // n_ans)][:n_ans] + una[:: max(1, len(una) // n_una)][:n_una]
        results.append(score(gw, subset, "generate"))
        results[-1]["load_s"] = load_s
    n_ans = sum(q["answerable"] for q in questions)
    print(f"## Answer quality (bench/experiments/answer_quality.py)\n\n{len(questions)} questions "
          f"({n_ans} answerable, {len(questions) - n_ans} unanswerable) from {args.questions.name}; "
          f"index {gw.store.active_id()}. {machine_markdown()}\n")
    print("### Calibration of answer.min_similarity\n")
    print("\n".join(cal_lines))
    print(f"\nChosen: **{threshold}** (now the default in gateway/config.py).\n")
    print("### Citation quality with that threshold\n")
    print("| mode | citation precision | answerable with >= 1 gold citation | unanswerable -> not_found | "
          "false refusals | answered w/o valid citation | outcomes | total p50 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        label = ("extractive" if r["mode"] == "extractive"
                 else f"generate (SmolLM2-135M Q4_1, llama.cpp; {r['questions']} questions)")
        print(f"| {label} | {r['citation_precision']:.3f} | {r['answerable_with_gold_citation']:.3f} | "
              f"{r['unanswerable_not_found']:.3f} | {r['false_refusals']:.3f} | "
              f"{r['answered_without_valid_citation']} | {json.dumps(r['outcomes'])} | {r['total_ms_p50']:.0f} |")
    print("\nRaw:", json.dumps(results, default=str))
    gw.log.close()
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
