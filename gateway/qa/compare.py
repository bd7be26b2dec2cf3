"""Compare two replay runs: metric deltas, changed answers, and the upgrade gate's verdict."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, cast

from gateway.errors import GatewayError
from gateway.qa.metrics import HIGHER_IS_BETTER, SHOWN_WITH_CITATIONS, PageRef, figure, gold_pages
from gateway.qa.replay import ReplayRun, StoredItem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

class Rule(TypedDict, total=False):
    """How far one metric may move (a gate file's [metrics.NAME] table)."""

    max_drop: float
    max_rise: float
    max_increase_pct: float
    min_abs_ms: float


class Gate(TypedDict, total=False):
    """The upgrade gate: rules per metric, and whether an answerable question may lose its gold citation."""

    lost_gold_citation: bool
    metrics: dict[str, Rule]


class Delta(TypedDict):
    baseline: float | None
    candidate: float | None
    delta: float | None
    delta_pct: float | None


class Side(TypedDict):
    """One run's answer to a changed question."""

    outcome: str | None
    answer: str | None
    citations: list[str]


class Change(TypedDict):
    question_id: str
    question: str
    changes: list[str]
    baseline: Side
    candidate: Side


# The gate used when none is given. Latency rules need both a relative and an absolute growth,
# so that the noise of a busy 2-core box does not fail a replay of the same deployment.
DEFAULT_GATE: Gate = {
    "lost_gold_citation": True,
    "metrics": {
        "hit_at_5": {"max_drop": 0.02},
        "mrr": {"max_drop": 0.03},
        "citation_coverage": {"max_drop": 0.02},
        "false_answer_rate": {"max_rise": 0.0},
        "false_refusal_rate": {"max_rise": 0.05},
        "answer_correctness": {"max_drop": 0.05},
        "unsupported_numbers": {"max_rise": 0},
        "ttft_ms_p95": {"max_increase_pct": 20, "min_abs_ms": 50},
        "total_ms_p95": {"max_increase_pct": 20, "min_abs_ms": 100},
    },
}


class GateError(GatewayError):
    """A gate file that cannot be used."""


def load_gate(path: str | Path | None) -> Gate:
    if path is None:
        return DEFAULT_GATE
    p = Path(path)
    if not p.is_file():
        raise GateError(f"gate file not found: {p}")
    try:
        gate = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GateError(f"{p}: invalid TOML: {exc}") from exc
    for name, rule in (gate.get("metrics") or {}).items():
        if name not in HIGHER_IS_BETTER:
            raise GateError(f"{p}: unknown metric {name!r} (known: {', '.join(sorted(HIGHER_IS_BETTER))})")
        unknown = set(rule) - {"max_drop", "max_rise", "max_increase_pct", "min_abs_ms"}
        if unknown:
            raise GateError(f"{p}: metric {name}: unknown rule key(s) {sorted(unknown)}")
    return cast(Gate, gate)  # the TOML, its metric names and rule keys checked above


@dataclass
class Comparison:
    baseline: ReplayRun
    candidate: ReplayRun
    deltas: dict[str, Delta]
    changed: list[Change]
    violations: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, object]:
        b, c = self.baseline, self.candidate
        return {"baseline": {"id": b["id"], "label": b["label"], "time": b["time"], "deployment": b["deployment"]},
                "candidate": {"id": c["id"], "label": c["label"], "time": c["time"], "deployment": c["deployment"]},
                "deltas": self.deltas, "changed": self.changed, "gate": {
                    "passed": self.passed, "violations": self.violations}}


def _pages(citations: list[PageRef]) -> list[str]:
    return sorted({f"{c.get('manual')} p.{c.get('page')}" for c in citations})


def _gold_cited(item: StoredItem) -> bool:
    q = item.get("question")
    gold = gold_pages(q) if q else set()
    return item.get("outcome") in SHOWN_WITH_CITATIONS and any((c.get("manual"), c.get("page")) in gold
                                                     for c in item["citations"])


def compare_runs(baseline: ReplayRun, candidate: ReplayRun, gate: Gate | None = None) -> Comparison:
    gate = DEFAULT_GATE if gate is None else gate
    deltas: dict[str, Delta] = {}
    for name in HIGHER_IS_BETTER:
        a, b = figure(baseline["metrics"], name), figure(candidate["metrics"], name)
        d = None if a is None or b is None else round(b - a, 4)
        pct = None if d is None or not a else round(100.0 * d / abs(a), 2)
        deltas[name] = {"baseline": a, "candidate": b, "delta": d, "delta_pct": pct}
    base_items = {it["question_id"]: it for it in baseline["items"]}
    changed: list[Change] = []
    lost: list[str] = []
    for it in candidate["items"]:
        old = base_items.get(it["question_id"])
        if old is None:
            continue
        what = []
        if old["outcome"] != it["outcome"]:
            what.append("outcome")
        if (old["answer"] or "").strip() != (it["answer"] or "").strip():
            what.append("answer")
        if _pages(old["citations"]) != _pages(it["citations"]):
            what.append("citations")
        if _gold_cited(old) and not _gold_cited(it) and (q := it.get("question")) and q.get("answerable"):
            what.append("lost_gold_citation")
            lost.append(it["question_id"])
        if what:
            changed.append({"question_id": it["question_id"], "question": it["question"]["question"],
                            "changes": what, "baseline": _side(old), "candidate": _side(it)})
    cmp = Comparison(baseline, candidate, deltas, changed)
    cmp.violations = _verdict(gate, deltas, lost)
    return cmp


def _side(item: StoredItem) -> Side:
    return {"outcome": item["outcome"], "answer": item["answer"], "citations": _pages(item["citations"])}


def _verdict(gate: Gate, deltas: dict[str, Delta], lost: list[str]) -> list[str]:
    out: list[str] = []
    for name, rule in (gate.get("metrics") or {}).items():
        d = deltas.get(name)
        a, b = (d["baseline"], d["candidate"]) if d else (None, None)
        if a is None or b is None:
            continue
        if "max_drop" in rule and a - b > rule["max_drop"] + 1e-9:
            out.append(f"{name} dropped {a:.4g} -> {b:.4g} (allowed drop {rule['max_drop']})")
        if "max_rise" in rule and b - a > rule["max_rise"] + 1e-9:
            out.append(f"{name} rose {a:.4g} -> {b:.4g} (allowed rise {rule['max_rise']})")
        if "max_increase_pct" in rule and a > 0:
            grew_pct = 100.0 * (b - a) / a
            if grew_pct > rule["max_increase_pct"] and (b - a) > rule.get("min_abs_ms", 0):
                out.append(f"{name} grew {grew_pct:.0f}% ({a:.0f} -> {b:.0f} ms; allowed "
                           f"{rule['max_increase_pct']}%)")
    if gate.get("lost_gold_citation", False) and lost:
        out.append(f"{len(lost)} answerable question(s) lost their gold citation: {', '.join(lost[:10])}"
                   + (" ..." if len(lost) > 10 else ""))
    return out
