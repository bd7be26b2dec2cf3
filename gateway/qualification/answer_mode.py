"""Which answer mode this gateway serves, and why: the configured one, or the one the profile earned.

`answer.mode = "auto"` (the default) serves generate mode only with a profile whose model passed
doctor's gate 4 ("answers": a replay of a gold question set, gateway.qualification.answers_gate) in
exactly this version of the profile. Any other profile answers extractively: the evidence in well under a second,
and never a green badge that a model has not earned. "generate" or "extractive" in manualqa.toml,
or an admin's switch on the running server, decide instead. /api/v1/health, /api/v1/deployment and
the admin page say which mode serves and why.

The same rule holds for a question that asks for generate mode itself (the page's "Explain", the
API's `"mode": "generate"`): the model of a profile that has not passed gate 4 still writes, but
`ModeDecision.unqualified` says why its text is only a draft, and the pipeline then shows the
evidence first and never the green `answered` (gateway.answer.outcome). Pinning answer.mode =
"generate" is the admin's explicit trust (and what gate 4 and `replay --mode generate` measure under).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:
    from runtimes.profiles import Profile

CONFIGURABLE = ("auto", "generate", "extractive")
HOW_TO_QUALIFY = "manualqa doctor --answers QUESTIONS.jsonl"


class Verdict(TypedDict):
    """Gate 4's last verdict for a profile, in short, as /api/v1/deployment shows it (`qualification`)."""

    status: str | None  # pass, fail or error
    checked_at: str | None
    detail: str | None
    metrics: dict[str, object] | None


@dataclass(frozen=True)
class ModeDecision:
    mode: Literal["generate", "extractive"]  # what answers run in now
    configured: str  # answer.mode: auto, generate or extractive
    reason: str  # one sentence for people: why this mode
    qualification: Verdict | None = field(default=None)  # gate 4's last verdict for this profile

    @property
    def unqualified(self) -> str | None:
        """Why the model's answers are drafts, never green (None: gate 4 passed, or generate is pinned).

        A per-question generate must not earn what the gateway's default withholds: the page's
        "Explain" on a profile that failed gate 4 once showed a wrong voltage as a green answer."""
        verdict = self.qualification
        status = verdict["status"] if verdict is not None else None
        if self.configured == "generate" or status == "pass":
            return None
        if verdict is None or status is None:
            return "the profile's model has not been qualified (doctor's gate 4, answers)"
        what = "failed" if status == "fail" else "could not be measured by"
        return f"the profile's model {what} gate 4 (answers) on {verdict['checked_at']}"

    def to_dict(self) -> dict[str, object]:
        return {"mode": self.mode, "configured": self.configured, "reason": self.reason,
                "qualification": self.qualification, "unqualified": self.unqualified}


def _verdict(data_dir: Path, profile: Profile) -> Verdict | None:
    """Gate 4's last verdict for exactly this profile text, in short (None: never measured)."""
    from gateway.records.deployments import qualification

    last = qualification(data_dir, profile.name, profile.content_hash)
    if last is None:
        return None
    gate = last.get("gate") or {}
    return {"status": gate.get("status"), "checked_at": last.get("checked_at"), "detail": gate.get("detail"),
            "metrics": (gate.get("evidence") or {}).get("metrics")}


def decide_mode(configured: str, data_dir: Path, profile: Profile | None, profile_error: str | None = None
                ) -> ModeDecision:
    """The mode in force: the configured one, or under "auto" what the profile's gate 4 verdict allows.

    The last verdict is reported whatever decides, so that an admin who pinned a mode still sees it."""
    if profile is None:
        verdict = None
        if configured == "auto":
            return ModeDecision("extractive", configured, f"no deployment profile resolves ({profile_error})")
    else:
        verdict = _verdict(data_dir, profile)
    name = profile.name if profile is not None else ""
    if configured in ("generate", "extractive"):
        fixed: Literal["generate", "extractive"] = "generate" if configured == "generate" else "extractive"
        return ModeDecision(fixed, configured, f"answer.mode is set to {configured}", verdict)
    if verdict is None:
        return ModeDecision("extractive", configured,
                            f"profile {name!r} has not been qualified for generate mode "
                            f"(doctor's gate 4, answers: {HOW_TO_QUALIFY})")
    when = verdict["checked_at"]
    if verdict["status"] == "pass":
        return ModeDecision("generate", configured, f"profile {name!r} passed gate 4 (answers) on {when}",
                            verdict)
    what = "failed gate 4 (answers)" if verdict["status"] == "fail" else "could not be measured by gate 4 (answers)"
    return ModeDecision("extractive", configured, f"profile {name!r} {what} on {when}", verdict)
