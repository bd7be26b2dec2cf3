"""Search in other languages: Chinese, German and French manuals, asked in their language and in English.

Each half (eval/zh-dev, de-dev, fr-dev choose; eval/zh-test, de-test, zh-test2, de-test2, fr-test report) is its
own gateway: its manuals plus the two English sample manuals as distractors, ingested by the real path into a
temporary data directory with the shipped settings, searched as the gateway searches (Services.search, k=5). A
hit is a passage of the gold manual on a gold page. Questions are grouped by the language they are
asked in: a manual tag ending in "en" marks an English question about the half's manual; an English half's
questions_zh.jsonl / questions_de.jsonl are its questions asked in Chinese / German (groups zh->en, de->en).

    python -m bench.suite.languages_eval                       # this tree, writes docs/bench/languages_eval.md
    python -m bench.suite.languages_eval --before d28aebe      # and a revision before, side by side
    python -m bench.suite.languages_eval --before d28aebe --answers --halves zh-dev de-dev fr-dev zh-test de-test \
        zh-test2 de-test2 fr-test dev test                      # the page of docs/bench/languages_eval.md
    python -m bench.suite.languages_eval --halves zh-dev --no-write --embedder multilingual-e5-small
    python -m bench.suite.languages_eval --halves zh-dev3 de-dev3 zh-dev4 de-dev4 --no-write   # more development halves
    python -m bench.suite.languages_eval --companion off       # MiniLM alone (default: the shipped "auto")
    python -m bench.suite.languages_eval --together --answers --halves zh-test de-test zh-test2 de-test2 fr-test test
                         # one gateway of all their manuals, as on a site: docs/bench/experiments/languages_eval_site.md

The companion embedder is the gateway's own "auto" (the multilingual-e5 `make install` converted into this
tree's data folder, or $MANUALQA_DATA's, else the one a bundle installed): the shipped state of this box. The
page names which one ran, so a box without e5 never passes its MiniLM figures off as the shipped ones.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
EVAL = HERE.parents[2] / "eval"
SAMPLES = HERE.parents[2] / "sample_manuals"
HALVES = ("zh-dev", "de-dev", "fr-dev", "zh-test", "de-test", "zh-test2", "de-test2", "fr-test")
# more development halves: measured only when named with --halves, never by default
EXTRA = ("zh-dev2", "de-dev2", "zh-dev3", "de-dev3", "zh-dev4", "de-dev4", "fr-dev2")
ENGLISH = ("dev", "dev2", "dev3", "test")  # the English halves, to show what the languages cost English


def group_of(half: str, qid: str) -> str:
    """"zh" for a Chinese question of zh-dev, "en->zh" for an English one about its manuals."""
    if half in ENGLISH:
        return "en"
    lang = half.split("-")[0]
    tag = re.fullmatch(rf"{re.escape(half)}-([a-z0-9]+)-\d+", qid)
    return f"en->{lang}" if tag and tag.group(1).endswith("en") else lang


def questions_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "questions.jsonl").read_text("utf-8").splitlines() if x.strip()]


def asked(half: str, folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(group, question) for each question of a half, then the same questions asked in another language where
    the half has them (an English half's questions_zh.jsonl: group "zh->en", the gold pages unchanged)."""
    questions = questions_of(folder)
    out = [(group_of(half, q["id"]), q) for q in questions]
    for path in sorted(folder.glob("questions_*.jsonl")):
        lang = path.stem.split("_", 1)[1]
        said = {t["id"]: t["question"] for t in map(json.loads, path.read_text("utf-8").splitlines()) if t}
        out += [(f"{lang}->en", {**q, "question": said[q["id"]]}) for q in questions if q["id"] in said]
    return out


def gold_rank(hits: list[Any], q: dict[str, Any]) -> int | None:
    """The rank (1-based) of the first hit on a gold manual and page; None: none in the hits."""
    gold = {(q["manual"], p) for p in q["pages"]}
    return next((i for i, h in enumerate(hits, 1) if (h.manual, h.page) in gold), None)


def tally(g: dict[str, Any], rank: int | None, qid: str) -> None:
    """One answerable question's rank into a group's counts (n, hit1, hit5, mrr, misses)."""
    for key, zero in (("n", 0), ("hit1", 0), ("hit5", 0), ("mrr", 0.0), ("misses", [])):
        g.setdefault(key, zero)
    g["n"] += 1
    if rank is None:
        g["misses"].append(qid)
        return
    g["hit1"] += rank == 1
    g["hit5"] += 1
    g["mrr"] += 1.0 / rank


def _answer(gw: Any, q: dict[str, Any], g: dict[str, Any]) -> None:
    """The extractive answer's outcome: refused (not_found) or not, and for an answerable question
    whether the quoted evidence holds the gold evidence (its content terms, as gateway.qa.metrics reads)."""
    res = gw.answer(q["question"], mode="extractive")
    refused = res.outcome == "not_found"
    if not q["answerable"]:
        g["unanswerable"] += 1
        g["unanswerable_refused"] += refused
        return
    g["asked"] += 1
    g["refused"] += refused
    if not refused:
        quoted = " ".join(" ".join(c.sentences) for c in res.citations) or res.answer
        g["evidence"] += same_text(q["evidence"]) in same_text(quoted)


def same_text(text: str) -> str:
    """The text as the index holds a page (ingest's normalise_text: ligatures, accents drawn apart), without
    whitespace: the gold evidence is pypdf's raw text, the quote the index's."""
    from ingest.pdf import normalise_text

    return "".join(normalise_text(text).split())


def measure(halves: list[str], eval_dir: Path, embedder: str | None, answers: bool = False,
            companion: str = "off", together: bool = False) -> dict[str, Any]:
    """{half: {group: {n, hit1, hit5, mrr, misses}}, "_cost": {...}} for this interpreter's manualqa. together:
    one gateway of every half's manuals, as on a site, instead of a gateway per half."""
    out: dict[str, Any] = {}
    cost: dict[str, Any] = {}
    for batch in ([halves] if together else [[h] for h in halves]):
        pdfs = [p for h in batch for p in sorted((eval_dir / h / "manuals").glob("*.pdf"))]
        pdfs += sorted(SAMPLES.glob("*.pdf"))
        with _gateway(batch[0], embedder, companion) as gw:
            t = time.perf_counter()
            report = gw.ingest(pdfs)
            ingest_s = time.perf_counter() - t
            failed = getattr(report, "failed", None)
            if failed:
                raise SystemExit(f"{batch[0]}: ingest failed: {failed}")
            pages = sum(m["page_count"] for m in gw.store.open().chunks.manuals())
            latencies: list[float] = []
            for half in batch:
                out[half] = _ask(gw, asked(half, eval_dir / half), answers, latencies)
        latencies.sort()
        cost["together" if together else batch[0]] = {"pages": pages, "ingest_s": ingest_s,
                                                        "pages_per_s": pages / ingest_s,
                                                        "search_p50_ms": latencies[len(latencies) // 2]}
    out["_cost"] = cost
    return out


@contextlib.contextmanager
def _gateway(name: str, embedder: str | None, companion: str) -> Iterator[Any]:
    from gateway.config import Settings
    from gateway.services import Services

    with tempfile.TemporaryDirectory(prefix=f"lang-{name}-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        if embedder:
            settings.embedding.model = embedder
        settings.embedding.companion = companion or "off"
        gw = Services(settings)
        try:
            yield gw
        finally:
            gw.log.close()


def _ask(gw: Any, questions: list[tuple[str, dict[str, Any]]], answers: bool,
         latencies: list[float]) -> dict[str, dict[str, Any]]:
    """Each question searched (k = 5) and, with answers, answered; counts per group."""
    groups: dict[str, dict[str, Any]] = {}
    for group, q in questions:
        t = time.perf_counter()
        hits = gw.search(q["question"], k=5)
        latencies.append((time.perf_counter() - t) * 1000)
        g = groups.setdefault(group, {"n": 0, "hit1": 0, "hit5": 0, "mrr": 0.0, "misses": [], "asked": 0,
                                      "refused": 0, "evidence": 0, "unanswerable": 0, "unanswerable_refused": 0})
        if answers:
            _answer(gw, q, g)
        if q["answerable"]:
            tally(g, gold_rank(hits, q), q["id"])
    return groups


@contextlib.contextmanager
def half_gateway(half: str | list[str], eval_dir: Path = EVAL) -> Iterator[Any]:
    """A gateway of one half as these measurements build it (its manuals + the two sample manuals, ingested by
    the real path into a temporary data directory, shipped settings, the shipped companion): for experiments
    that ask the same half under several variants. A list of halves: one gateway of all their manuals."""
    from gateway.config import Settings
    from gateway.services import Services

    halves = [half] if isinstance(half, str) else half
    pdfs = [p for h in halves for p in sorted((eval_dir / h / "manuals").glob("*.pdf"))] + sorted(SAMPLES.glob("*.pdf"))
    with tempfile.TemporaryDirectory(prefix=f"half-{halves[0]}-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        settings.embedding.companion = shipped_companion("auto")
        gw = Services(settings)
        gw.ingest(pdfs)
        try:
            yield gw
        finally:
            gw.log.close()


def shipped_companion(value: str) -> str:
    """The companion directory "auto" means on this box (as a gateway with the default data folder resolves
    it), "" for none."""
    from gateway.companion_folder import companion_setting
    from gateway.config import Settings

    data = Path(os.environ.get("MANUALQA_DATA") or HERE.parents[2] / "data")
    settings = Settings(data_dir=data)
    settings.embedding.companion = value
    return companion_setting(settings)


def in_tree(tree: Path, halves: list[str], embedder: str | None, answers: bool, companion: str,
            together: bool = False) -> dict[str, Any]:
    """measure() run by a child Python whose manualqa is the one in `tree` (a revision before; one without
    embedding.companion ignores that setting and searches with its model alone)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        cmd = [sys.executable, str(HERE), "--measure", fh.name, "--eval-dir", str(EVAL), "--halves", *halves,
               "--companion", companion or "off"]
        if embedder:
            cmd += ["--embedder", embedder]
        if answers:
            cmd += ["--answers"]
        if together:
            cmd += ["--together"]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run(cmd, cwd=tree, env=env, check=True)
        return dict(json.loads(Path(fh.name).read_text()))


def table(results: dict[str, dict[str, Any]]) -> str:
    """One row per half and question language, one column group per side."""
    sides = list(results)
    head = "| half | asked in | n | " + " | ".join(f"{s} hit@1 | {s} hit@5 | {s} MRR" for s in sides) + " |"
    lines = [head, "|" + "---|" * (3 + 3 * len(sides))]
    first = results[sides[0]]
    for half in (h for h in first if not h.startswith("_")):
        for group, g in first[half].items():
            cells = []
            for side in sides:
                x = results[side][half].get(group, {"n": 0})
                n = x["n"] or 1
                cells.append(f"{x.get('hit1', 0) / n:.2f} | {x.get('hit5', 0) / n:.2f} | {x.get('mrr', 0) / n:.2f}")
            lines.append(f"| {half} | {group} | {g['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def answer_table(results: dict[str, dict[str, Any]]) -> str:
    """Extractive answers: answerable refused, gold evidence quoted, unanswerable refused."""
    lines = ["| side | half | asked in | answerable refused | gold evidence quoted | unanswerable refused |",
             "|---|---|---|---|---|---|"]
    for side, res in results.items():
        for half, groups in res.items():
            if half.startswith("_"):
                continue
            for group, g in groups.items():
                if not g.get("asked") and not g.get("unanswerable"):
                    continue
                lines.append(f"| {side} | {half} | {group} | {g['refused']}/{g['asked']} | "
                             f"{g['evidence']}/{g['asked']} | {g['unanswerable_refused']}/{g['unanswerable']} |")
    return "\n".join(lines)


def cost_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| side | half | pages | ingest s | pages/s | search p50 ms |", "|---|---|---|---|---|---|"]
    for side, res in results.items():
        for half, c in res["_cost"].items():
            lines.append(f"| {side} | {half} | {c['pages']} | {c['ingest_s']:.1f} | {c['pages_per_s']:.2f} | "
                         f"{c['search_p50_ms']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halves", nargs="+", default=list(HALVES), choices=HALVES + EXTRA + ENGLISH)
    parser.add_argument("--before", help="a git revision (or source tree) measured the same way, side by side")
    parser.add_argument("--embedder", help="embedding.model for both sides (default: the configured one)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--answers", action="store_true", help="also the extractive answers' outcomes (slower)")
    parser.add_argument("--companion", default="auto",
                        help='embedding.companion for both sides: "auto" (the shipped one, resolved here), "off", or a '
                             "converted e5 directory")
    parser.add_argument("--together", action="store_true",
                        help="one gateway of every half's manuals (as on a site), not a gateway per half")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: write measure()'s JSON here
    parser.add_argument("--eval-dir", default=str(EVAL), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        Path(args.measure).write_text(json.dumps(measure(args.halves, Path(args.eval_dir), args.embedder,
                                                         args.answers, args.companion, args.together)))
        return 0
    companion = shipped_companion(args.companion)
    sys.path.insert(0, str(HERE.parents[2]))
    from bench.harness import EXPERIMENTS, source_tree, write_section

    results: dict[str, dict[str, Any]] = {}
    if args.before:
        with source_tree(args.before) as tree:
            results[f"before ({args.before})"] = in_tree(tree, args.halves, args.embedder, args.answers, companion,
                                                         args.together)
    results["now"] = measure(args.halves, EVAL, args.embedder, args.answers, companion, args.together)
    beside = f"multilingual companion `{Path(companion).name}` beside the dense model" if companion else \
        "no multilingual companion (the dense model alone)"
    where = ("one gateway of every listed half's manuals and the two sample manuals, as on a site, `--together`; "
             "each half in its own gateway: docs/bench/languages_eval.md" if args.together else
             "their manuals + the two sample manuals as distractors; all of them in one gateway, as on a site: "
             "docs/bench/experiments/languages_eval_site.md")
    text = ("# Search in Chinese, German and French (issue 47)" + (", one gateway" if args.together else "") + "\n\n"
            f"Retrieval on the language halves ({where}; shipped settings, k = 5); a hit is a passage of the gold "
            "manual on a gold page. `zh`/`de`/`fr`: asked in the "
            "manual's language; `en->zh`/`en->de`/`en->fr`: asked in English about those manuals; `zh->en`/`de->en`: "
            "an English half's questions asked in Chinese / German (eval/dev's translated here, eval/test's by a "
            "helper, blind). The -dev halves (and eval/dev) chose, the -test halves (and eval/test) report. Searched "
            f"with {beside}.\n\n" + table(results) + (
                "\n\nExtractive answers (default settings, mode extractive):\n\n" + answer_table(results)
                if args.answers else "") + "\n\nCost (2 cores; ingest includes the two sample "
            "manuals):\n\n" + cost_table(results) + "\n\nMisses (now): " + json.dumps(
                {h: {g: v["misses"] for g, v in groups.items()} for h, groups in results["now"].items()
                 if not h.startswith("_")}, ensure_ascii=False))
    print(text)
    if not args.no_write:
        module = __spec__.name if __spec__ else "bench.suite.languages_eval"
        # a one-gateway run is a page beside the suite's (docs/bench/ holds exactly the suite's sections)
        out = EXPERIMENTS / "languages_eval_site.md" if args.together else None
        write_section(module, text, out=out, argv=sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
