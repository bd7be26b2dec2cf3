"""How the lexical side cuts Chinese (issue 47): character bigrams (today), jieba's words, or both.

Each variant swaps the two functions that analyse a CJK run, on the index side (ingest.text.terms.
index_terms, which the chunk store's index_text calls) and on the question side (retrieval.fts.
_cjk_units), by monkeypatching them for the length of the variant; nothing else changes. Each variant
ingests eval/zh-dev's manuals plus the two English sample manuals (the distractors of
bench/suite/languages_eval.py) by the real path into a fresh data directory, then asks zh-dev's
questions (in Chinese, and in English about the Chinese manuals) through Services.search, the path
`manualqa search` takes (hybrid, shipped settings, k = 5), and once more lexical-only. A hit is a
passage of the gold manual on a gold page. Only Han runs are segmented; kana and Hangul stay pairs.

Cost: the sample manuals are ingested first on their own (English pages/s), then the Chinese manuals
are added (the English ones are re-used, so the second ingest is the Chinese manuals' cost); the time
spent in index_terms is counted apart; search p50 is over the hybrid searches; jieba's dictionary is
loaded in a child Python and its RSS growth read from /proc.

FTS5's trigram tokenizer is a property of the whole FTS5 table, so its variant also swaps the table's
tokenizer (retrieval.chunkstore.SCHEMA): a Han run is stored as it is and searched as its overlapping
three-character pieces; every other term is stored as today and then matched as a substring. A unit
shorter than three characters (a two-character Chinese word, "5v") finds nothing under it.

Chosen on zh-dev only; zh-test is reported by bench/suite/languages_eval.py once the choice is made.

    python -m bench.experiments.cjk_segmenter     # writes docs/bench/experiments/cjk_segmenter.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HAN_ONLY = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")
MAX_CJK_PHRASE = 6  # as retrieval.fts: a run of 3..6 characters is also searched as one phrase


def _jieba_words(run: str) -> list[str]:
    import jieba  # type: ignore[import-untyped]  # not a dependency: installed for this experiment

    return [w for w in jieba.lcut(run, HMM=True) if w.strip()]


def _jieba_search_words(run: str) -> list[str]:
    import jieba

    return [w for w in jieba.lcut_for_search(run, HMM=True) if w.strip()]


def _bigrams(run: str) -> list[str]:
    from ingest.text.terms import bigrams

    return bigrams(run)


# A variant: (index terms of a Han run, question units of a Han run cut at its question words, whether
# a short run is also searched as the phrase of its index terms).
Cut = Callable[[str], list[str]]


def _words_and_long(words: Cut) -> Cut:
    """Character pairs of the run, then its words of three characters or more (a two-character word is
    a pair already; repeating it would double its term frequency)."""
    return lambda run: _bigrams(run) + [w for w in words(run) if len(w) >= 3]


def _trigrams(run: str) -> list[str]:
    return [run[i:i + 3] for i in range(len(run) - 2)] if len(run) > 3 else [run]


VARIANTS: dict[str, dict[str, Any]] = {
    "bigrams (today)": {"index": _bigrams, "query": _bigrams, "phrase": True},
    "jieba words": {"index": _jieba_words, "query": _jieba_words, "phrase": True},
    "jieba search mode": {"index": _jieba_search_words, "query": _jieba_words, "phrase": False},
    "jieba words + bigrams": {"index": _words_and_long(_jieba_words), "query": _words_and_long(_jieba_words),
                              "phrase": False},
    "FTS5 trigram": {"index": lambda run: [run], "query": _trigrams, "phrase": False, "tokenizer": "trigram"},
}
TODAY = "bigrams (today)"


@contextlib.contextmanager
def variant(index_cut: Cut, query_cut: Cut, phrase: bool, tokenizer: str | None = None) -> Iterator[dict[str, float]]:
    """ingest.text.terms.index_terms and retrieval.fts._cjk_units with a Han run cut by the given
    functions (kana and Hangul runs, and everything else, as the product does); `tokenizer`: the FTS5
    table's tokenizer instead of the shipped one, for the versions created meanwhile."""
    import ingest.text.terms as terms
    import retrieval.chunkstore as chunkstore
    import retrieval.fts as fts
    from ingest.text.scripts import join_cjk_lines
    from ingest.text.stemming import stem

    def index_terms(text: str, language: str) -> list[str]:
        out: list[str] = []
        for token in terms.TOKEN.findall(join_cjk_lines(terms.normalize(text))):
            for piece, cjk in terms.pieces(token):
                if cjk:
                    out.extend(index_cut(piece) if HAN_ONLY.fullmatch(piece) else terms.bigrams(piece))
                    continue
                out.append(stem(piece.lower(), language))
                out.extend(stem(part.lower(), language) for part in terms._glued_parts(piece))
        return out

    def cjk_units(parts: list[str], langs: list[str], phrases: list[list[str]]) -> list[list[str]]:
        units: list[list[str]] = []
        for part in parts:
            for piece, cjk in terms.pieces(part):
                if not cjk:
                    units.append([piece])
                    continue
                for run in terms.cjk_query_runs(piece):
                    han = bool(HAN_ONLY.fullmatch(run))
                    cut = query_cut(run) if han else terms.bigrams(run)
                    if 3 <= len(run) <= MAX_CJK_PHRASE and len(cut) > 1 and (phrase or not han):
                        phrases.append(cut)
                    units.extend([p] for p in cut)
        return units

    timed = {"s": 0.0}

    def counted(text: str, language: str) -> list[str]:
        t = time.perf_counter()
        try:
            return index_terms(text, language)
        finally:
            timed["s"] += time.perf_counter() - t

    saved = (terms.index_terms, fts._cjk_units, chunkstore.SCHEMA)
    terms.index_terms, fts._cjk_units = counted, cjk_units
    if tokenizer:
        shipped = "tokenize='unicode61 remove_diacritics 2'"
        assert shipped in chunkstore.SCHEMA
        chunkstore.SCHEMA = chunkstore.SCHEMA.replace(shipped, f"tokenize='{tokenizer}'")
    try:
        yield timed
    finally:
        terms.index_terms, fts._cjk_units, chunkstore.SCHEMA = saved


def jieba_rss_mib() -> dict[str, float]:
    """RSS growth of importing jieba and loading its dictionary, in a fresh Python."""
    code = ("import re,time\n"
            "def rss(): return int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1))/1024\n"
            "a=rss(); import jieba, logging; jieba.setLogLevel(logging.WARNING); b=rss(); t=time.perf_counter()\n"
            "jieba.initialize(); s=time.perf_counter()-t; c=rss()\n"
            "print(a, b, c, s)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    a, b, c, s = map(float, out)
    return {"import_mib": b - a, "dict_mib": c - b, "total_mib": c - a, "load_s": s}


def run(half: str) -> dict[str, Any]:
    import logging

    import jieba

    from bench.suite.languages_eval import gold_rank, group_of, questions_of, tally
    from gateway.config import Settings
    from gateway.services import Services
    from retrieval.search import search_with_timings
    from retrieval.types import SearchParams

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()  # loaded before any timing (the dictionary's cost is reported apart)
    folder = REPO / "eval" / half
    zh = sorted((folder / "manuals").glob("*.pdf"))
    samples = sorted((REPO / "sample_manuals").glob("*.pdf"))
    qs = [q for q in questions_of(folder) if q["answerable"]]
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:  # a warm-up, so that the first variant's timings load nothing
        gw = Services(Settings(data_dir=Path(tmp) / "data"))
        gw.ingest(samples[:1])
        gw.search("warm up", k=5)
        gw.log.close()
    for name, v in VARIANTS.items():
        with (variant(v["index"], v["query"], v["phrase"], v.get("tokenizer")) as timed,
              tempfile.TemporaryDirectory() as tmp):
            gw = Services(Settings(data_dir=Path(tmp) / "data"))
            t = time.perf_counter()
            gw.ingest(samples)
            en_s = time.perf_counter() - t
            en_pages = sum(m["page_count"] for m in gw.store.open().chunks.manuals())
            analyse_en = timed["s"]
            t = time.perf_counter()
            gw.ingest(zh + samples)
            zh_s = time.perf_counter() - t
            zh_pages = sum(m["page_count"] for m in gw.store.open().chunks.manuals()) - en_pages
            emb = gw.embedder_for(gw.store.active_id())
            groups: dict[str, dict[str, Any]] = {}
            lat: list[float] = []
            ranks: dict[str, int | None] = {}
            for q in qs:
                group = group_of(half, q["id"])
                t = time.perf_counter()
                hybrid = gw.search(q["question"], k=5)
                lat.append((time.perf_counter() - t) * 1000)
                lexical, _ = search_with_timings(gw.store, emb, q["question"], SearchParams(k=5, mode="lexical"))
                for mode, hits in (("hybrid", hybrid), ("lexical", lexical)):
                    rank = gold_rank(hits, q)
                    if mode == "hybrid":
                        ranks[q["id"]] = rank
                    tally(groups.setdefault(f"{group} {mode}", {}), rank, q["id"])
            gw.log.close()
            out[name] = {"groups": groups, "en_pages": en_pages, "en_s": en_s, "zh_pages": zh_pages, "zh_s": zh_s,
                         "analyse_s": timed["s"] - analyse_en, "p50_ms": statistics.median(lat),
                         "ranks": ranks}
    return out


def report(half: str, res: dict[str, Any], rss: dict[str, float]) -> str:
    groups = list(next(iter(res.values()))["groups"])
    lines = ["# Chinese on the lexical side: character pairs or a segmenter (issue 47)", "",
             f"{half}, answerable questions (hit@1 / hit@5 / MRR); `zh`: asked in Chinese, `en->zh`: asked in "
             "English about the Chinese manuals; `hybrid` is Services.search as shipped (k = 5), `lexical` the "
             "FTS5 side alone. Variants swap the analysis of a Han run on both sides (index and question).", "",
             "| variant | " + " | ".join(f"{g} (n={res[next(iter(res))]['groups'][g]['n']})" for g in groups) + " |",
             "|---|" + "---|" * len(groups)]
    for name, r in res.items():
        cells = []
        for g in groups:
            x = r["groups"][g]
            n = x["n"] or 1
            cells.append(f"{x['hit1'] / n:.2f} / {x['hit5'] / n:.2f} / {x['mrr'] / n:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Cost (2 shared cores): English = the two sample manuals ingested alone; Chinese = the zh-dev "
              "manuals added to them (the English ones re-used); analysis = time in index_terms for the Chinese "
              "ingest (parsing and embedding are the rest of the ingest time, and vary with the other jobs on "
              "the machine); search p50 over the hybrid searches.", "",
              "| variant | English pages/s | Chinese pages | Chinese ingest s | Chinese pages/s | ratio | "
              "analysis s | search p50 ms |", "|---|---|---|---|---|---|---|---|"]
    for name, r in res.items():
        en = r["en_pages"] / r["en_s"]
        zh = r["zh_pages"] / r["zh_s"]
        lines.append(f"| {name} | {en:.2f} | {r['zh_pages']} | {r['zh_s']:.1f} | {zh:.2f} | {zh / en:.2f} | "
                     f"{r['analyse_s']:.2f} | {r['p50_ms']:.1f} |")
    lines += ["", decision(res), ""]
    lines += [f"jieba {_jieba_version()}: import +{rss['import_mib']:.0f} MiB RSS, dictionary load "
              f"+{rss['dict_mib']:.0f} MiB ({rss['load_s']:.1f} s, from its cache file), together "
              f"+{rss['total_mib']:.0f} MiB.", "",
              "Misses (hybrid): " + json.dumps({n: {g: r["groups"][g]["misses"] for g in groups if "hybrid" in g}
                                                for n, r in res.items()}, ensure_ascii=False), "",
              "Hybrid ranks that differ from today's (question: today -> variant; - = not in the top 5): " + json.dumps(
                  {n: {q: f"{_r(res[TODAY]['ranks'][q])} -> {_r(r['ranks'][q])}" for q in r["ranks"]
                       if r["ranks"][q] != res[TODAY]["ranks"][q]} for n, r in res.items() if n != TODAY},
                  ensure_ascii=False)]
    return "\n".join(lines)


def _rates(r: dict[str, Any], group: str) -> tuple[float, float, float]:
    x = r["groups"][group]
    n = x["n"] or 1
    return x["hit1"] / n, x["hit5"] / n, x["mrr"] / n


def decision(res: dict[str, Any]) -> str:
    """The rule of issue 47's brief: a segmenter is adopted when its hybrid search raises hit@1 or MRR of
    the Chinese questions and loses nothing on the English questions about the same manuals."""
    today_zh, today_en = _rates(res[TODAY], "zh hybrid"), _rates(res[TODAY], "en->zh hybrid")
    better = []
    for name, r in res.items():
        zh, en = _rates(r, "zh hybrid"), _rates(r, "en->zh hybrid")
        if name != TODAY and (zh[0] > today_zh[0] or zh[2] > today_zh[2] + 0.005) and zh[1] >= today_zh[1] and all(
                a >= b for a, b in zip(en, today_en, strict=True)):
            better.append(name)
    if better:
        return "Decision: better than today's pairs on the hybrid search: " + ", ".join(better) + "."
    return ("Decision: the character pairs stay. No variant raises hit@1 or MRR of the hybrid search (the "
            "path `manualqa search` takes) on zh-dev's Chinese questions without a loss (the lexical-only "
            "columns show what the FTS5 side alone does). A segmenter would add a "
            "dependency, its dictionary's memory and the need to record in each index version how its Chinese "
            "was cut, for nothing measurable here.")


def _r(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _jieba_version() -> str:
    import jieba

    return str(getattr(jieba, "__version__", "?"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", default="zh-dev", choices=["zh-dev"], help="the development half only")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    rss = jieba_rss_mib()
    res = run(args.half)
    text = report(args.half, res, rss)
    print(text)
    if not args.no_write:
        from bench.harness import EXPERIMENTS, write_section

        write_section("bench.experiments.cjk_segmenter", text, out=EXPERIMENTS / "cjk_segmenter.md",
                      argv=sys.argv[1:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
