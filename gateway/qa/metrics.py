"""Metrics of one replay run: retrieval, citations, refusals, answer correctness and support, latency.

Answer correctness is scored against the gold answer: when the gold answer holds numbers, every
one of them must appear in the answer (numbers are what a technician acts on); otherwise it is the
token F1 of content words. A refusal scores 0. The support figures come from gateway.answer.support.
Answered precision is the share of green (`answered`) answers that are right (correctness >= 0.5:
every gold number, or half the gold words); the green rate is the share of answerable questions
that got one. Together they say whether a model's green badge can be trusted (doctor's gate 4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

from gateway.answer.citations import CITATION_RE
from gateway.answer.claim_terms import numbers_of
from gateway.answer_fields import Outcome
from ingest.text.terms import content_terms

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from typing_extensions import Required  # typing's own from Python 3.11


# -- what a replay reads and keeps ---------------------------------------------------------------
class Question(TypedDict, total=False):
    """One line of a question set (questions.jsonl): `id` and `question` required (replay.load_questions
    checks them), the gold evidence and answer optional; fields not named here are kept as they are."""

    id: Required[str]
    question: Required[str]
    manual: str  # the manual the gold pages are in
    pages: list[int]  # gold pages
    answerable: bool  # default: whether it names gold pages
    answer: str  # the gold answer


class PageRef(TypedDict, total=False):
    """A cited or retrieved passage of an answer, as its JSON gives it and a replay keeps it."""

    n: int | None
    manual: Required[str | None]
    page: Required[int | None]
    score: float | None
    passage: str
    title: str | None


class Answered(TypedDict, total=False):
    """An answer as a replay reads it: AnswerResult.to_dict(), POST /api/v1/ask's JSON, or an error in their shape."""

    id: str
    outcome: str
    error: str | None
    answer: str
    mode: str
    flags: list[str]
    profile: str
    chain_id: str | None
    index_version: str | None
    citations: list[PageRef]
    passages: list[PageRef]
    timings: dict[str, float | str | None]
    support: list[dict[str, object]]
    generation_config: dict[str, object]


class Item(TypedDict):
    """One question answered in a run, as compute_metrics reads it (replay and bench_worker build it)."""

    position: int
    question: Question
    result: Answered
    citations: list[PageRef]
    retrieved: list[PageRef]


# A run's metrics (compute_metrics): numbers or None, `outcomes` a count per outcome (None: an answer without one).
RunMetrics = dict[str, float | None | dict[str | None, int]]


def figure(metrics: Mapping[str, object], name: str) -> float | None:
    """A metric as a number (None: not measured, or not a number)."""
    value = metrics.get(name)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Metric:
    """One replay metric: its name in a run, which way is better, and how people read it."""

    name: str
    higher_is_better: bool
    label: str
    group: Literal["quality", "answers", "latency", "resources"]


# The one list of replay metrics: the gate (compare), the HTML report, `replay run`, `bench` read it.
METRICS: tuple[Metric, ...] = (
    Metric("hit_at_1", True, "hit@1", "quality"),
    Metric("hit_at_5", True, "hit@5", "quality"),
    Metric("mrr", True, "MRR", "quality"),
    Metric("citation_precision", True, "citation precision", "quality"),
    Metric("citation_coverage", True, "citation coverage", "quality"),
    Metric("false_refusal_rate", False, "false refusals", "quality"),
    Metric("false_answer_rate", False, "false answers", "quality"),
    Metric("answer_similarity", True, "answer similarity", "quality"),
    Metric("answer_correctness", True, "answer correctness", "answers"),
    Metric("answered_correctness", True, "correctness of answered", "answers"),
    Metric("answered_precision", True, "answered precision", "answers"),
    Metric("green_rate", True, "answered (green)", "answers"),
    Metric("supported_sentence_rate", True, "supported sentences", "answers"),
    Metric("unsupported_numbers", False, "unsupported numbers", "answers"),
    Metric("unanswerable_not_found_rate", True, "unanswerable refused", "answers"),
    Metric("error_rate", False, "errors", "answers"),
    Metric("retrieval_ms_p50", False, "retrieval p50 ms", "latency"),
    Metric("retrieval_ms_p95", False, "retrieval p95 ms", "latency"),
    Metric("ttft_ms_p50", False, "TTFT p50 ms", "latency"),
    Metric("ttft_ms_p95", False, "TTFT p95 ms", "latency"),
    Metric("total_ms_p50", False, "total p50 ms", "latency"),
    Metric("total_ms_p95", False, "total p95 ms", "latency"),
    Metric("decode_tps_median", True, "decode tok/s", "latency"),
    Metric("peak_rss_mb", False, "peak RSS MiB", "resources"),
)
BY_NAME = {m.name: m for m in METRICS}
HIGHER_IS_BETTER = {m.name: m.higher_is_better for m in METRICS}


def names(*groups: str) -> tuple[str, ...]:
    """Metric names of the given groups, in the registry's order."""
    return tuple(m.name for m in METRICS if m.group in groups)


CORRECT = 0.5  # an answer's correctness from which it counts as right (answered precision)

# Outcomes whose citations a technician sees as the place to look (coverage counts both).
SHOWN_WITH_CITATIONS: tuple[Outcome, ...] = ("answered", "evidence_only")


def percentile(values: list[float], q: float, *, method: Literal["linear", "nearest", "floor"] = "linear"
               ) -> float | None:
    """The q-th percentile (q in 0..100) of the values that are not None; None for no values.

    The one percentile of gateway and bench/. `linear` (the replay metrics) interpolates between the
    two nearest ranks and rounds to 3 decimals; the bench scripts keep the convention their published
    figures were measured with: `nearest` is the value at index round(q/100 * (n-1)) (load, server),
    `floor` the value at index int(q/100 * n) (pipeline_overhead, search_latency).
    """
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    if method == "nearest":
        return vals[min(len(vals) - 1, max(0, round(q / 100 * (len(vals) - 1))))]
    if method == "floor":
        return vals[min(len(vals) - 1, int(q / 100 * len(vals)))]
    pos = (len(vals) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(vals) - 1)
    return round(vals[lo] + (vals[hi] - vals[lo]) * (pos - lo), 3)


def gold_pages(q: Question) -> set[tuple[str | None, int]]:
    """The (manual, page) pairs a question names as its gold evidence: the one gold set of gateway and bench/."""
    return {(q.get("manual"), int(p)) for p in q.get("pages") or []}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


Embed = Callable[[list[str]], "npt.NDArray[np.float32]"]  # an embedder's encode(): L2-normalised rows


def compute_metrics(items: list[Item], embed: Embed | None = None, k: int = 5) -> RunMetrics:
    answerable = [it for it in items if it["question"].get("answerable")]
    unanswerable = [it for it in items if not it["question"].get("answerable")]
    hit1 = hit5 = 0
    rr = 0.0
    cited = cited_gold = covered = 0
    refusals = 0
    for it in answerable:
        gold = gold_pages(it["question"])
        ranks = [i for i, h in enumerate(it["retrieved"][:k], start=1) if (h["manual"], h["page"]) in gold]
        if ranks:
            hit1 += ranks[0] == 1
            hit5 += 1
            rr += 1.0 / ranks[0]
        cits = [(c["manual"], c["page"]) for c in it["citations"]]
        cited += len(cits)
        good = sum(1 for c in cits if c in gold)
        cited_gold += good
        covered += good > 0 and it["result"].get("outcome") in SHOWN_WITH_CITATIONS
        refusals += it["result"].get("outcome") == "not_found"
    false_answers = sum(1 for it in unanswerable if it["result"].get("outcome") == "answered")
    outcomes = Counter(it["result"].get("outcome") for it in items)
    n_ans = len(answerable)
    metrics: RunMetrics = {
        "questions": len(items), "answerable": n_ans, "unanswerable": len(unanswerable),
        "outcomes": dict(outcomes),
        "hit_at_1": _rate(hit1, n_ans), "hit_at_5": _rate(hit5, n_ans),
        "mrr": round(rr / n_ans, 4) if n_ans else None,
        "citation_precision": _rate(cited_gold, cited), "citation_coverage": _rate(covered, n_ans),
        "false_refusal_rate": _rate(refusals, n_ans),
        "false_answer_rate": _rate(false_answers, len(unanswerable)),
        "unanswerable_not_found_rate": _rate(
            sum(1 for it in unanswerable if it["result"].get("outcome") == "not_found"), len(unanswerable)),
        "error_rate": _rate(outcomes.get("error", 0), len(items)),
        "answer_similarity": _similarity(answerable, embed),
        **_answer_quality(items, answerable),
    }
    for name in ("retrieval_ms", "ttft_ms", "total_ms"):
        values: list[float] = [v for it in items
                               if isinstance(v := (it["result"].get("timings") or {}).get(name), int | float)]
        metrics[f"{name}_p50"] = percentile(values, 50)
        metrics[f"{name}_p95"] = percentile(values, 95)
    tps = [(it["result"].get("timings") or {}).get("decode_tps") for it in items]
    metrics["decode_tps_median"] = percentile([t for t in tps if t and isinstance(t, int | float)], 50)
    return metrics


def _similarity(answerable: list[Item], embed: Embed | None) -> float | None:
    """Mean cosine between each answer and its gold answer, with the embedded model."""
    pairs = [(it["result"].get("answer") or "", it["question"].get("answer") or "") for it in answerable]
    pairs = [(a, g) for a, g in pairs if a.strip() and g.strip()]
    if embed is None or not pairs:
        return None
    vecs = embed([a for a, _ in pairs] + [g for _, g in pairs])
    n = len(pairs)
    sims = [float((vecs[i] * vecs[n + i]).sum()) for i in range(n)]  # vectors are L2-normalised
    return round(sum(sims) / n, 4)


def correctness(answer: str, gold: str) -> float:
    """1/0 on the gold answer's numbers when it has any, else token F1 of content words."""
    answer = CITATION_RE.sub(" ", answer or "")
    gold_numbers = numbers_of(gold)
    if gold_numbers:
        return 1.0 if gold_numbers <= numbers_of(answer) else 0.0
    want, have = content_terms(gold), content_terms(answer)
    common = len(want & have)
    if not want or not have or not common:
        return 0.0
    precision, recall = common / len(have), common / len(want)
    return 2 * precision * recall / (precision + recall)


def unsupported_numbers(result: Answered) -> int:
    """Numbers in the answer shown that none of its cited passages holds."""
    cited = " ".join(c.get("passage") or "" for c in result.get("citations") or [])
    shown = CITATION_RE.sub(" ", result.get("answer") or "")
    return len(numbers_of(shown) - numbers_of(cited))


def _answer_quality(items: list[Item], answerable: list[Item]) -> dict[str, float | None]:
    scores = [correctness(it["result"].get("answer") or "", it["question"].get("answer") or "")
              if it["result"].get("outcome") in SHOWN_WITH_CITATIONS else 0.0
              for it in answerable if it["question"].get("answer")]
    answered = [correctness(it["result"].get("answer") or "", it["question"].get("answer") or "")
                for it in answerable if it["result"].get("outcome") == "answered" and it["question"].get("answer")]
    # every green answer counts: one to an unanswerable question is wrong by definition
    green = answered + [0.0 for it in items
                        if not it["question"].get("answerable") and it["result"].get("outcome") == "answered"]
    sentences = [s for it in items if it["result"].get("mode") == "generate"
                 for s in it["result"].get("support") or []]
    shown = [it["result"] for it in items if it["result"].get("outcome") == "answered"]
    return {
        "answer_correctness": round(sum(scores) / len(scores), 4) if scores else None,
        "answered_correctness": round(sum(answered) / len(answered), 4) if answered else None,
        "answered_precision": _rate(sum(1 for c in green if c >= CORRECT), len(green)),
        "green_rate": _rate(sum(1 for it in answerable if it["result"].get("outcome") == "answered"),
                            len(answerable)),
        "supported_sentence_rate": _rate(sum(1 for s in sentences if s.get("supported")), len(sentences)),
        "unsupported_numbers": sum(unsupported_numbers(r) for r in shown),
    }
