"""Learned evidence weights for questions outside English: fitted on the Chinese and German development halves.

The extractive answer adds a learned linear score to each candidate sentence's hand-set one
(gateway/answer/sentence_score.py). Its weights were fitted on English questions (eval/dev, dev2), where the
words are stems and the similarity MiniLM's; a Chinese or German question is scored on character pairs or
German stems, and on the companion's similarity at another scale (retrieval.companion SENTENCE_SCALE). Here
a second table (WEIGHTS_OTHER: word score, passage rank, the similarity term, a number, a value of the asked
kind, sentence length) is fitted on the questions of the language development halves that are not in
English (as ingest.text.languages.detect_question reads them), each half its own gateway with the shipped
companion. Targets: the candidate sentences that hold the question's gold evidence (whitespace aside) or 60 %
of its content terms. Fit: a listwise softmax over each question's candidates, L2 penalty. Leave one half out:
each half is answered with the weights fitted on the other halves, and its gold evidence counted in the real
answers (gateway.services answer, extractive); the penalty with the most gold evidence held out is then fitted
on all halves. English questions keep their weights (eval/ and the questions asked in English about these
manuals are not touched). The test halves never enter.

    .venv/bin/python -m bench.experiments.evidence_weights_languages [--data DIR] [--no-write]
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.experiment_page import intro, parser, publish

HALVES = ["zh-dev", "zh-dev2", "zh-dev3", "zh-dev4", "de-dev", "de-dev2", "de-dev3", "de-dev4"]
PENALTIES = (0.01, 0.1, 1.0)
SHARE = 0.6
ITERATIONS, STEP = 1500, 0.1
Weights = dict[str, tuple[float, float, float]]


def holds(evidence: str, sentence: str) -> bool:
    """The sentence holds the gold evidence: all of it, inside a longer snippet, or SHARE of its content terms."""
    from ingest.text.terms import content_terms

    e, s = "".join(evidence.split()), "".join(sentence.split())
    if e in s or len(s) >= 12 and s in e:
        return True
    terms = content_terms(evidence)
    return bool(terms) and len(terms & content_terms(sentence)) / len(terms) >= SHARE


@contextlib.contextmanager
def gateway(half: str, data: Path | None) -> Iterator[Any]:
    """The half's gateway: an ingested data folder under `data` when given (data/<half>), else built anew."""
    if data is None:
        from bench.suite.languages_eval import half_gateway

        with half_gateway(half) as gw:
            yield gw
        return
    from bench.suite.languages_eval import shipped_companion
    from gateway.config import Settings
    from gateway.services import Services

    settings = Settings(data_dir=data / half)
    settings.embedding.companion = shipped_companion("auto")
    gw = Services(settings)
    try:
        yield gw
    finally:
        gw.log.close()


def answer_half(gw: Any, half: str, weights: Weights | None) -> list[dict[str, Any]]:
    """Each answerable question outside English: its candidates (hand-set score, features, target) as the
    shipped pipeline scored them, and whether the real answer quoted the gold evidence, with `weights` as the
    table for such questions (None: the English one, as before this experiment)."""
    from bench.suite.languages_eval import EVAL, questions_of, same_text
    from gateway.answer.extractive import scored_candidates
    from gateway.answer.sentence_score import WEIGHTS
    from ingest.text.languages import detect_question

    ep: Any = importlib.import_module("gateway.answer.evidence_params")  # both patched for the run
    pl: Any = importlib.import_module("gateway.answer.pipeline")
    seen: dict[str, Any] = {}
    pick = pl.pick_sentences

    def capture(question: str, hits: Any, params: Any, *, extra: Any = None) -> Any:
        cands, _steps = scored_candidates(question, hits, params, extra=extra)
        seen["cands"] = [(c.base, c.features, c.sentence) for c in cands]
        return pick(question, hits, params, extra=extra)

    kept = ep.WEIGHTS_OTHER
    ep.WEIGHTS_OTHER = WEIGHTS if weights is None else weights
    pl.pick_sentences = capture
    out = []
    try:
        for q in questions_of(EVAL / half):
            if not q["answerable"] or detect_question(q["question"]) in (None, "en"):
                continue
            seen.clear()
            res = gw.answer(q["question"], mode="extractive")
            quoted = [s for c in res.citations for s in c.sentences]
            gold = same_text(q["evidence"])
            refused = res.outcome == "not_found"
            cands = seen.get("cands") or []
            out.append({"id": q["id"], "refused": refused, "cands": cands,
                        "target": [holds(q["evidence"], s) for _b, _f, s in cands],
                        "evidence": not refused and gold in same_text(" ".join(quoted)),
                        "first": not refused and bool(quoted) and gold in same_text(quoted[0])})
    finally:
        pl.pick_sentences, ep.WEIGHTS_OTHER = pick, kept
    return out


def fit(records: list[dict[str, Any]], penalty: float) -> Weights:
    """WEIGHTS_OTHER's features fitted on the records' candidates (standardised on them): gradient descent on
    the mean negative log of the targets' softmax share, plus penalty x |w|^2."""
    from gateway.answer.sentence_score import CANDIDATE_FEATURES, FEATURES_OTHER

    cols = [CANDIDATE_FEATURES.index(n) for n in FEATURES_OTHER]
    usable = [(np.array([b for b, _f, _s in r["cands"]]), np.array([f for _b, f, _s in r["cands"]])[:, cols],
               np.array(r["target"])) for r in records if not r["refused"] and any(r["target"])]
    stacked = np.vstack([x for _b, x, _t in usable])
    mean, sd = stacked.mean(0), stacked.std(0) + 1e-9
    w = np.zeros(len(cols))
    for _ in range(ITERATIONS):
        grad = 2 * penalty * w
        for base, x, target in usable:
            z = (x - mean) / sd
            s = base + z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = np.where(target, p, 0.0) / p[target].sum()  # the targets' share of the softmax, renormalised
            grad += z.T @ (p - q) / len(usable)
        w -= STEP * grad
    return {n: (round(float(m), 4), round(float(d), 4), round(float(x), 4))
            for n, m, d, x in zip(FEATURES_OTHER, mean, sd, w, strict=True)}


def counts(records: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    """(questions, refused, gold evidence quoted, gold evidence in the first quoted sentence)."""
    return (len(records), sum(r["refused"] for r in records), sum(r["evidence"] for r in records),
            sum(r["first"] for r in records))


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, HALVES)
    ap.add_argument("--data", type=Path, help="a folder of ingested halves (DIR/<half>), else each is built anew")
    args = ap.parse_args(argv)
    with contextlib.ExitStack() as stack:
        gws = {h: stack.enter_context(gateway(h, args.data)) for h in args.halves}
        before = {h: answer_half(gw, h, None) for h, gw in gws.items()}
        plain = {h: answer_half(gw, h, {}) for h, gw in gws.items()}
        held: dict[float, dict[str, list[dict[str, Any]]]] = {}
        for penalty in PENALTIES:
            held[penalty] = {h: answer_half(gw, h, fit([r for o in args.halves if o != h for r in before[o]],
                                                       penalty)) for h, gw in gws.items()}
            print(penalty, {h: counts(v) for h, v in held[penalty].items()}, file=sys.stderr, flush=True)
        chosen = max(PENALTIES, key=lambda p: (sum(counts(v)[2] for v in held[p].values()),
                                              sum(counts(v)[3] for v in held[p].values())))
        final = fit([r for h in args.halves for r in before[h]], chosen)
        after = {h: answer_half(gw, h, final) for h, gw in gws.items()}
    rows = [("English weights (before)", before), ("no learned part", plain),
            *((f"fitted on the other halves, L2 {p}" + (" **chosen**" if p == chosen else ""), held[p])
              for p in PENALTIES), (f"fitted on all {len(args.halves)} halves, L2 {chosen} (in-sample)", after)]
    head = "| weights for questions outside English | " + " | ".join(args.halves) + " | all |"
    lines = [head, "|---|" + "---|" * (len(args.halves) + 1)]
    for name, res in rows:
        cells = [counts(res[h]) for h in args.halves]
        total = tuple(sum(c[i] for c in cells) for i in range(4))
        lines.append(f"| {name} | " + " | ".join(f"{c[2]} / {c[3]} of {c[0]}" for c in (*cells, total)) + " |")
    table = ["| feature | mean | sd | weight |", "|---|---|---|---|"] + [
        f"| {n} | {m} | {d} | {x:+.4f} |" for n, (m, d, x) in final.items()]
    body = "\n".join([intro(__doc__), "",
                      "Cells: gold evidence quoted / gold evidence in the first quoted sentence, of the answerable "
                      "questions outside English (refused ones count as neither).", "", *lines, "",
                      f"Chosen penalty: L2 {chosen} (the most gold evidence held out). Its weights on all halves "
                      "(gateway/answer/sentence_score.py WEIGHTS_OTHER):", "", *table, "",
                      "WEIGHTS_OTHER = " + repr(final)])
    raw = {name: {h: counts(res[h]) for h in args.halves} for name, res in rows}
    publish(__file__, "Evidence weights for questions outside English", body, raw, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
