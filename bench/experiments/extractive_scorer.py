"""Can the trained cross-encoder pick the evidence sentences? eval/dev chooses, eval/test reports once.

Extractive answers (gateway/answer/extractive.py) quote the best sentences of the top passages by a
lexical score: the question's content terms a sentence holds (rarer ones count more), over the
square root of its length, plus the passage's rank. Issue 23's reranker (retrieval/models/
rerank_minilm_int8) was trained to score (question, passage) pairs; this script scores every
candidate sentence of the top passages with it, as the sentence alone and as "title - heading"
plus the sentence (the form it was trained on), and tries it alone and mixed with the lexical
score (lexical + weight * reranker logit), over the top 3 or 5 passages, quoting 1, 2 or 3
sentences. Everything else is the shipped selection: sentences of fewer than 4 words are not
candidates, at most 2 per passage, no duplicate, no later sentence without a question term.

Each half is its own gateway (its manuals plus the two sample manuals, ingested by the real path
into a temporary folder, searched with the shipped settings). Correctness is replay's
(gateway.qa.metrics.correctness: the gold answer's numbers, else content-word F1) over every
answerable question with a gold answer, before any not-found decision. The reranker setting with
the best development correctness is chosen; it would ship only if its gain over the shipped
lexical score on dev has a paired-bootstrap 95 % interval above zero and the test half agrees.

    .venv/bin/python -m bench.experiments.extractive_scorer [--no-write]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import write_section
from bench.suite.retrieval_eval import build, shipped, split_paths
from gateway.answer.extractive import EVIDENCE, _clean, extractive_answer
from gateway.qa.metrics import correctness
from ingest.text.sentences import sentence_spans
from ingest.text.terms import content_terms

FORMS = {"s": "sentence alone", "hs": "title - heading + sentence"}
WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0, None)  # None: the reranker alone (plus the passage rank)
PASSAGES = (3, 5)
COUNTS = (1, 2, 3)
SHIPPED = (3, 3)  # the shipped extractive answer: top 3 passages, 3 sentences


@dataclass
class Cand:
    n: int  # passage number (1-based)
    pos: int  # sentence position in its passage
    text: str
    terms: set[str]
    rr: dict[str, float] = field(default_factory=dict)  # reranker logit per form
    lex: float = 0.0  # the shipped lexical score, computed over the candidates of the same passages


def candidates(question: str, hits: list[Any], max_passages: int) -> list[Cand]:
    """The shipped candidates and lexical scores (gateway.answer.extractive.pick_sentences)."""
    want = content_terms(question)
    out = []
    for n, hit in enumerate(hits[:max_passages], start=1):
        for pos, (s, e) in enumerate(sentence_spans(hit.text)):
            text = _clean(hit.text[s:e])
            if len(text.split()) >= 4:
                out.append(Cand(n, pos, text, content_terms(text)))
    df: dict[str, int] = {}
    for c in out:
        for t in c.terms & want:
            df[t] = df.get(t, 0) + 1
    for c in out:
        matched = sum(1.0 + math.log(len(out) / df[t]) for t in c.terms & want)
        c.lex = matched / math.sqrt(max(len(c.terms), 4)) + 0.6 / c.n + 0.05 / (c.pos + 1)
    return out


def select(cands: list[Cand], want: set[str], key: Callable[[Cand], float], count: int) -> str:
    """The shipped selection and ordering with another score; the answer text with its citations."""
    chosen: list[Cand] = []
    per: dict[int, int] = {}
    for c in sorted(cands, key=key, reverse=True):
        if len(chosen) >= count:
            break
        if per.get(c.n, 0) >= 2 or any(c.text == x.text for x in chosen):
            continue
        if chosen and not (c.terms & want):
            break
        chosen.append(c)
        per[c.n] = per.get(c.n, 0) + 1
    order = {n: i for i, n in enumerate(dict.fromkeys(c.n for c in chosen))}
    chosen.sort(key=lambda c: (order[c.n], c.pos))
    return " ".join((c.text if c.text[-1:] in ".!?…" else c.text + ".") + f" [{c.n}]" for c in chosen)


def key_for(form: str, weight: float | None) -> Callable[[Cand], float]:
    if weight is None:
        return lambda c: c.rr[form] + 0.6 / c.n
    return lambda c: c.lex + weight * c.rr[form]


@dataclass
class Item:
    q: dict[str, Any]
    hits: list[Any]
    cands: dict[int, list[Cand]]  # per max_passages


def prepare(store: Any, embedder: Any, reranker: Any, questions: list[dict[str, Any]]) -> list[Item]:
    from gateway.config import AnswerSettings
    from retrieval.rerank import passage_for_rerank
    from retrieval.search import search
    from retrieval.types import SearchParams

    k = AnswerSettings().max_passages
    items = []
    for q in questions:
        if not q.get("answerable") or not q.get("answer"):
            continue
        hits = search(store, embedder, q["question"], SearchParams(k=k))[:k]
        per = {p: candidates(q["question"], hits, p) for p in PASSAGES}
        widest = per[max(PASSAGES)]
        for form in FORMS:
            texts = [c.text if form == "s" else passage_for_rerank(hits[c.n - 1].title, hits[c.n - 1].heading, c.text)
                     for c in widest]
            for c, v in zip(widest, reranker.score(q["question"], texts) if texts else [], strict=True):
                c.rr[form] = float(v)
        scores = {(c.n, c.pos): c.rr for c in widest}
        for p in PASSAGES:
            for c in per[p]:
                c.rr = scores[(c.n, c.pos)]
        items.append(Item(q, hits, per))
    return items


def scores(items: list[Item], passages: int, count: int, key: Callable[[Cand], float] | None) -> list[float]:
    """Correctness per question; key None is the shipped lexical score."""
    out = []
    for it in items:
        cands = it.cands[passages]
        want = content_terms(it.q["question"])
        text = (select(cands, want, key or (lambda c: c.lex), count) if cands
                else extractive_answer(it.q["question"], it.hits, dataclasses.replace(EVIDENCE, max_sentences=count)))
        out.append(correctness(text, it.q["answer"]))
    return out


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def bootstrap(a: list[float], b: list[float], rounds: int = 4000) -> tuple[float, float]:
    """Paired bootstrap 95 % interval of mean(a - b)."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    rng = random.Random(27)
    means = sorted(mean([rng.choice(d) for _ in d]) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def oracle(items: list[Item], passages: int, up_to: int = 3) -> float:
    """The best any choice of at most `up_to` whole sentences can score (a ceiling, not a method)."""
    out = []
    for it in items:
        cands = it.cands[passages]
        best_single = sorted(cands, key=lambda c: correctness(c.text, it.q["answer"]), reverse=True)[:12]
        best = 0.0
        for r in range(1, up_to + 1):
            for combo in itertools.combinations(best_single, r):
                text = " ".join(c.text for c in combo)
                best = max(best, correctness(text, it.q["answer"]))
        out.append(best)
    return mean(out)


def evidence_rank(items: list[Item], key: Callable[[Cand], float]) -> tuple[int, int, float]:
    """Over questions whose gold evidence is a sentence of the top 3: (n, ranked first, MRR)."""
    def norm(s: str) -> str:
        return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()

    n = first = 0
    rr = 0.0
    for it in items:
        ev = norm(it.q.get("evidence") or "")
        cands = it.cands[3]
        gold = [c for c in cands if ev and (ev[:40] in norm(c.text) or (len(norm(c.text)) > 15 and norm(c.text) in ev))]
        if not gold:
            continue
        ranked = sorted(cands, key=key, reverse=True)
        r = min(ranked.index(g) for g in gold) + 1
        n, first, rr = n + 1, first + (r == 1), rr + 1 / r
    return n, first, rr / max(1, n)


def latency(items: list[Item], reranker: Any, form: str, weight: float | None, passages: int,
            count: int) -> tuple[list[float], list[float]]:
    """ms per extractive answer: the shipped lexical one, and scoring + choosing with the reranker."""
    from retrieval.rerank import passage_for_rerank

    lex, rer = [], []
    key = key_for(form, weight)
    for it in items:
        t = time.perf_counter()
        extractive_answer(it.q["question"], it.hits)
        lex.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        cands = candidates(it.q["question"], it.hits, passages)
        texts = [c.text if form == "s" else passage_for_rerank(it.hits[c.n - 1].title, it.hits[c.n - 1].heading,
                                                                c.text) for c in cands]
        for c, v in zip(cands, reranker.score(it.q["question"], texts) if texts else [],
                        strict=True):
            c.rr = {form: float(v)}
        select(cands, content_terms(it.q["question"]), key, count)
        rer.append((time.perf_counter() - t) * 1000)
    return lex, rer


def label(form: str, weight: float | None) -> str:
    if weight is None:
        return f"reranker alone ({FORMS[form]}) + 0.6/passage rank"
    return f"lexical + {weight} x reranker ({FORMS[form]})"


def main(argv: list[str] | None = None) -> int:
    from retrieval.embedders import load_embedder
    from retrieval.rerank import BUILTIN, Reranker

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    embedder = load_embedder()
    reranker = Reranker(BUILTIN)
    reranker.score("warm up", ["a passage"])
    recipe, _query = shipped()
    halves: dict[str, list[Item]] = {}
    with tempfile.TemporaryDirectory(prefix="manualqa-extractive-bench-") as tmp:
        for half in ("dev", "test"):
            pdfs, questions = split_paths(half)
            store = build(pdfs, recipe, embedder, Path(tmp) / half)
            halves[half] = prepare(store, embedder, reranker, questions)
            print(f"{half}: {len(halves[half])} answerable questions scored", file=sys.stderr, flush=True)
    dev, test = halves["dev"], halves["test"]
    # the bench's lexical path is the shipped one, word for word
    for it in dev:
        want = content_terms(it.q["question"])
        shipped_params = dataclasses.replace(EVIDENCE, max_sentences=SHIPPED[1])
        shipped_text = extractive_answer(it.q["question"], it.hits, shipped_params)
        assert select(it.cands[SHIPPED[0]], want, lambda c: c.lex, SHIPPED[1]) == shipped_text or not it.cands[3], it.q
    base_dev = scores(dev, *SHIPPED, None)
    grid: dict[tuple[str, float | None, int, int], float] = {}
    for form, weight, p, c in itertools.product(FORMS, WEIGHTS, PASSAGES, COUNTS):
        grid[(form, weight, p, c)] = mean(scores(dev, p, c, key_for(form, weight)))
    lex_grid = {(p, c): mean(scores(dev, p, c, None)) for p in PASSAGES for c in COUNTS}
    best = max(grid, key=lambda g: (round(grid[g], 4), -g[2], -g[3]))
    form, weight, p, c = best
    chosen_dev = scores(dev, p, c, key_for(form, weight))
    lo, hi = bootstrap(chosen_dev, base_dev)
    base_test = scores(test, *SHIPPED, None)
    chosen_test = scores(test, p, c, key_for(form, weight))
    wins_dev = lo > 0
    test_agrees = mean(chosen_test) >= mean(base_test)
    ships = wins_dev and test_agrees
    lex_ms, rr_ms = latency(dev, reranker, form, weight, p, c)
    ev_lex = evidence_rank(dev, lambda x: x.lex)
    ev_rr = {f: evidence_rank(dev, key_for(f, None)) for f in FORMS}
    ev_mix = evidence_rank(dev, key_for(form, weight))

    lines = [
        "## Evidence sentences chosen by the trained reranker (bench/experiments/extractive_scorer.py)",
        "",
        f"Issue 27 item 3 asks for extractive answers that quote the sentence that answers (goal: replay's "
        f"answer correctness >= 0.60 on eval/test). The shipped lexical sentence score is compared with the "
        f"reranker `{reranker.model_id}` (model hash {reranker.model_hash[:12]}) scoring (question, sentence) "
        f"pairs, alone or mixed with it. Correctness over every answerable question with a gold answer, "
        f"before any not-found decision; every choice on eval/dev, eval/test scored once with it.",
        "",
        "| extractive answer | passages | sentences | dev correctness | test correctness |",
        "|---|---|---|---|---|",
        f"| lexical score (shipped) | {SHIPPED[0]} | {SHIPPED[1]} | {mean(base_dev):.3f} ({len(dev)} q) | "
        f"{mean(base_test):.3f} ({len(test)} q) |",
        f"| {label(form, weight)}, best on dev | {p} | {c} | {mean(chosen_dev):.3f} | {mean(chosen_test):.3f} |",
        f"| ceiling: the best <= 3 whole sentences (oracle) | 3 | <= 3 | {oracle(dev, 3):.3f} | "
        f"{oracle(test, 3):.3f} |",
        f"| ceiling: the best <= 3 whole sentences (oracle) | 5 | <= 3 | {oracle(dev, 5):.3f} | "
        f"{oracle(test, 5):.3f} |",
        "",
        f"Verdict: the best reranker setting on dev gains {mean(chosen_dev) - mean(base_dev):+.3f} there "
        f"(paired bootstrap 95 % interval [{lo:+.3f}, {hi:+.3f}], chosen among {len(grid)} settings, so the "
        f"gain is an optimistic estimate) and {mean(chosen_test) - mean(base_test):+.3f} on test: the reranker "
        f"sentence scorer {'ships' if ships else '**does not ship**'} (it ships only if the dev interval is "
        f"above zero and test agrees). Issue 27's goal (>= 0.60 on eval/test) is "
        f"{'met' if mean(chosen_test if ships else base_test) >= 0.60 else '**not met**'}; the oracle rows "
        f"show that no choice of whole sentences gets far past it: the gold answers are short paraphrases, so "
        f"quoted sentences lose on precision, and a question's gold numbers are in the top passages for only "
        f"some questions.",
        "",
        "Gold evidence sentence among the candidates of the top 3 passages (dev, questions whose evidence is "
        "one of them): how often a score ranks it first, and its MRR.",
        "",
        "| sentence score | questions | ranked first | MRR |",
        "|---|---|---|---|",
        f"| lexical (shipped) | {ev_lex[0]} | {ev_lex[1]} | {ev_lex[2]:.3f} |",
    ]
    for f in FORMS:
        e = ev_rr[f]
        lines.append(f"| {label(f, None)} | {e[0]} | {e[1]} | {e[2]:.3f} |")
    lines.append(f"| {label(form, weight)} (chosen) | {ev_mix[0]} | {ev_mix[1]} | {ev_mix[2]:.3f} |")
    lines += ["", "Development grid (correctness; rows: score, columns: passages x sentences):", "",
              "| score | " + " | ".join(f"{pp}p x {cc}" for pp in PASSAGES for cc in COUNTS) + " |",
              "|---|" + "---|" * (len(PASSAGES) * len(COUNTS)),
              "| lexical (shipped score) | " + " | ".join(f"{lex_grid[(pp, cc)]:.3f}" for pp in PASSAGES
                                                        for cc in COUNTS) + " |"]
    for f, w in itertools.product(FORMS, WEIGHTS):
        lines.append(f"| {label(f, w)} | " + " | ".join(f"{grid[(f, w, pp, cc)]:.3f}" for pp in PASSAGES
                                                        for cc in COUNTS) + " |")
    lines += ["", f"Cost per extractive answer on this machine (dev questions, onnxruntime {reranker.threads} "
              f"threads, the chosen setting: {p} passages):", "",
              "| sentence score | p50 ms | p95 ms |", "|---|---|---|",
              f"| lexical (shipped) | {statistics.median(lex_ms):.2f} | {pct(lex_ms, 95):.2f} |",
              f"| reranker ({FORMS[form]}), scoring + choosing | {statistics.median(rr_ms):.1f} | "
              f"{pct(rr_ms, 95):.1f} |",
              ]
    text = "\n".join(lines) + "\n"
    print(text)
    print(f"chosen: {label(form, weight)}, {p} passages, {c} sentences", file=sys.stderr)
    if not args.no_write:
        write_section(__spec__.name, text, conditions="It ingests both halves and scores every candidate "
                      "sentence twice: about 10 minutes on 2 cores.")
    return 0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


if __name__ == "__main__":
    raise SystemExit(main())
