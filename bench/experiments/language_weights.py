"""Search settings for questions outside English with the built-in English embedder (issue 47): its
cosine ranks Chinese and German text by little more than shared characters, so the dense side and the
best-sentence step (both MiniLM cosines) may hurt more than they help there. Chosen on eval/zh-dev and
eval/de-dev only; the test halves are reported by bench/suite/languages_eval.py once the choice is made.

    python -m bench.experiments.language_weights            # writes docs/bench/experiments/language_weights.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VARIANTS: dict[str, dict[str, float]] = {
    "shipped": {}, "dense 0.5": {"dense_weight": 0.5}, "dense 0.25": {"dense_weight": 0.25},
    "sentence 0": {"sentence_weight": 0.0}, "dense 0.5, sentence 0": {"dense_weight": 0.5, "sentence_weight": 0.0},
    "dense 0.25, sentence 0": {"dense_weight": 0.25, "sentence_weight": 0.0}, "sentence 2": {"sentence_weight": 2.0},
}


def run(halves: list[str]) -> dict[str, dict[str, list[float]]]:
    from gateway.config import Settings
    from gateway.services import Services
    from retrieval.search import search_with_timings

    out: dict[str, dict[str, list[float]]] = {}
    for half in halves:
        folder = REPO / "eval" / half
        pdfs = sorted((folder / "manuals").glob("*.pdf")) + sorted((REPO / "sample_manuals").glob("*.pdf"))
        qs = [json.loads(x) for x in (folder / "questions.jsonl").read_text("utf-8").splitlines() if x.strip()]
        with tempfile.TemporaryDirectory() as tmp:
            gw = Services(Settings(data_dir=Path(tmp) / "data"))
            gw.ingest(pdfs)
            emb = gw.embedder_for(gw.store.active_id())
            for name, change in VARIANTS.items():
                params = dataclasses.replace(gw.settings.search, k=5, **change)
                hit1 = hit5 = mrr = n = 0.0
                for q in qs:
                    if not q["answerable"] or "en-" in q["id"]:
                        continue  # the questions in the manual's language only
                    hits, _ = search_with_timings(gw.store, emb, q["question"], params)
                    gold = {(q["manual"], p) for p in q["pages"]}
                    rank = next((i for i, h in enumerate(hits, 1) if (h.manual, h.page) in gold), None)
                    n += 1
                    if rank:
                        hit1 += rank == 1
                        hit5 += 1
                        mrr += 1 / rank
                out.setdefault(name, {})[half] = [hit1 / n, hit5 / n, mrr / n]
            gw.log.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halves", nargs="+", default=["zh-dev", "de-dev"])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    res = run(args.halves)
    lines = ["# Search settings for questions outside English (issue 47)", "",
             "Questions in the manual's language on " + ", ".join(args.halves) + " (hit@1 / hit@5 / MRR).", "",
             "| variant | " + " | ".join(args.halves) + " |", "|---|" + "---|" * len(args.halves)]
    for name, halves in res.items():
        cells = " | ".join("{:.2f} / {:.2f} / {:.2f}".format(*halves[h]) for h in args.halves)
        lines.append(f"| {name} | {cells} |")
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        from bench.harness import EXPERIMENTS, write_section

        write_section("bench.experiments.language_weights", text, out=EXPERIMENTS / "language_weights.md",
                      argv=sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
