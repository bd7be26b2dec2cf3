"""The bar a profile's model must clear before its green badge is trusted: doctor's gate 4.

A model that loads and answers a smoke prompt (gate 1) may still answer wrongly in green. Gate 4
replays a gold question set through the whole pipeline on the profile and holds the figures to this
bar; a profile that has not cleared it serves extractive answers by default (answer.mode = "auto").
The bar lives in the profile's optional `[answers]` table, so a site states what it accepts beside
the model it ships:

    [answers]
    questions = "qa/site_questions.jsonl"   # the gold set (relative to the profile); "" = none
    limit = 0                               # 0: every question; n: the first n (a quicker check)
    min_answered_precision = 0.9            # right among the green answers
    min_green_rate = 0.3                    # green among the answerable questions
    max_false_answer_rate = 0.05            # green among the unanswerable questions
    max_p95_total_s = 60.0                  # time to the whole answer, 95th percentile
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields


class AnswerBarError(ValueError):
    """An [answers] table that cannot be used; raised as the profile's error by runtimes.profiles."""


@dataclass(frozen=True)
class AnswerBar:
    questions: str = ""
    limit: int = 0
    min_answered_precision: float = 0.9
    min_green_rate: float = 0.3
    max_false_answer_rate: float = 0.05
    max_p95_total_s: float = 60.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def shortfalls(self, metrics: Mapping[str, object]) -> list[str]:
        """What the replay's metrics (gateway.qa.metrics) miss of the bar, in words; [] when it is cleared."""
        out = []
        precision, green = _figure(metrics, "answered_precision"), _figure(metrics, "green_rate")
        false_rate, p95 = _figure(metrics, "false_answer_rate"), _figure(metrics, "total_ms_p95")
        if precision is None:
            out.append("no green answer at all (answered precision cannot be measured)")
        elif precision < self.min_answered_precision:
            out.append(f"answered precision {precision:.2f} < {self.min_answered_precision:.2f}")
        if green is None or green < self.min_green_rate:
            out.append(f"green rate {0.0 if green is None else green:.2f} < {self.min_green_rate:.2f}")
        if false_rate is not None and false_rate > self.max_false_answer_rate:
            out.append(f"unanswerable questions answered {false_rate:.2f} > {self.max_false_answer_rate:.2f}")
        if p95 is not None and p95 / 1000 > self.max_p95_total_s:
            out.append(f"p95 total time {p95 / 1000:.1f} s > {self.max_p95_total_s:.1f} s")
        return out


def _figure(metrics: Mapping[str, object], name: str) -> int | float | None:
    """A replay figure; None where the replay could not measure it."""
    value = metrics.get(name)
    return value if isinstance(value, (int, float)) else None


def parse_answer_bar(table: Mapping[str, object]) -> AnswerBar:
    """The [answers] table, every key typed and in range; unknown keys are refused."""
    known = {f.name: f for f in fields(AnswerBar)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise AnswerBarError(f"unknown key(s) answers.{', answers.'.join(unknown)}")
    default = AnswerBar()
    questions, limit = default.questions, default.limit
    bars: dict[str, float] = {}  # the four figures' bounds
    for key, value in table.items():
        if key == "questions":
            if not isinstance(value, str):
                raise AnswerBarError(f"answers.questions must be a path string, not {value!r}")
            questions = value
        elif key == "limit":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise AnswerBarError(f"answers.limit must be a whole number >= 0, not {value!r}")
            limit = value
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise AnswerBarError(f"answers.{key} must be a number >= 0, not {value!r}")
            if key.endswith(("_precision", "_rate")) and value > 1:
                raise AnswerBarError(f"answers.{key} is a share between 0 and 1, not {value!r}")
            bars[key] = float(value)
    return AnswerBar(questions=questions, limit=limit, **bars)
