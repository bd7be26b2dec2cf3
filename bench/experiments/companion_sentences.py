"""The evidence's sentence scores outside English with the multilingual companion (issue 47/48): how much of
the companion's cosine to add to MiniLM's (retrieval.companion.SENTENCE_SCALE). Chosen on the development
halves only (zh-dev, zh-dev2, de-dev, de-dev2); the test halves are reported by bench/suite/languages_eval.py
once, with the shipped scale.

Each half is ingested once with the shipped companion; then every question is answered (extractive) with
each scale, "0" being MiniLM's cosine alone (the state before), "e5 only" the companion's cosine instead of
MiniLM's. Counted per group: answerable questions whose quoted evidence holds the gold evidence (as
languages_eval reads it), answerable refused, unanswerable refused.

    python -m bench.experiments.companion_sentences     # writes docs/bench/experiments/companion_sentences.md
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import experiment_page as page

REPO = Path(__file__).resolve().parents[2]
HALVES = ["zh-dev", "zh-dev2", "de-dev", "de-dev2"]
SCALES: list[float | str] = [0.0, 3.0, 6.0, 10.0, 16.0, 25.0, "e5 only"]
Similar = Callable[[list[str]], list[float]]


def _variant(scale: float | str, shipped: Callable[..., Similar]) -> Callable[[Similar, Similar], Similar]:
    """What retrieval.companion.sentence_similarity (`shipped`, the module's own) becomes for this scale."""
    if scale == "e5 only":
        return lambda _primary, companion: companion
    return lambda primary, companion: shipped(primary, companion, float(scale))


def run(halves: list[str], scales: list[float | str]) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """{scale: {half: {group: {asked, evidence, refused, unanswerable, unanswerable_refused}}}}"""
    import retrieval.companion as companion_module
    from bench.suite.languages_eval import SAMPLES, group_of, questions_of, shipped_companion
    from bench.suite.languages_eval import _answer as answer_outcome
    from gateway.config import Settings
    from gateway.services import Services

    shipped = companion_module.sentence_similarity
    out: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    for half in halves:
        folder = REPO / "eval" / half
        pdfs = sorted((folder / "manuals").glob("*.pdf")) + sorted(SAMPLES.glob("*.pdf"))
        with tempfile.TemporaryDirectory(prefix=f"companion-sentences-{half}-") as tmp:
            settings = Settings(data_dir=Path(tmp) / "data")
            settings.embedding.companion = shipped_companion("auto")  # the data folder's e5, as make install converts
            gw = Services(settings)
            gw.ingest(pdfs)
            try:
                for scale in scales:
                    companion_module.sentence_similarity = _variant(scale, shipped)  # type: ignore[assignment]
                    groups: dict[str, dict[str, int]] = {}
                    for q in questions_of(folder):
                        g = groups.setdefault(group_of(half, q["id"]), dict.fromkeys(
                            ("asked", "evidence", "refused", "unanswerable", "unanswerable_refused"), 0))
                        answer_outcome(gw, q, g)  # as languages_eval counts it
                    out.setdefault(str(scale), {})[half] = groups
            finally:
                companion_module.sentence_similarity = shipped
                gw.log.close()
    return out


def table(results: dict[str, dict[str, dict[str, dict[str, int]]]]) -> str:
    groups = sorted({(h, g) for by_half in results.values() for h, gs in by_half.items() for g in gs})
    head = "| scale | " + " | ".join(f"{h} {g}" for h, g in groups) + " | gold evidence, all |"
    rows = [head, "|" + "---|" * (len(groups) + 2)]
    for scale, by_half in results.items():
        cells, total = [], 0
        for h, g in groups:
            c: dict[str, Any] = by_half.get(h, {}).get(g, {})
            total += c.get("evidence", 0)
            cells.append(f"{c.get('evidence', 0)}/{c.get('asked', 0)}")
        rows.append(f"| {scale} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = page.parser(__doc__, HALVES).parse_args(argv)
    results = run(args.halves, SCALES)
    page.publish(__file__, "Evidence sentences outside English scored with the companion",
                 "Cells: answerable questions whose quoted extractive evidence holds the gold evidence / answerable "
                 "questions, per half and group (zh, de: asked in the manual's language; en->zh, en->de: in English). "
                 "Scale 0 is MiniLM's cosine alone (before); \"e5 only\" the companion's cosine instead of MiniLM's. "
                 "Refusals per scale are in the raw counts.\n\n" + table(results), results,
                 write=not args.no_write, machine=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
