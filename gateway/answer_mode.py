"""Which answer mode this gateway serves, and why: the configured one, or the one the profile earned.

`answer.mode = "auto"` (the default) serves generate mode only with a profile whose model passed
doctor's gate 4 ("answers": a replay of a gold question set, gateway.qa.qualify) in exactly this
version of the profile. Any other profile answers extractively: the evidence in well under a second,
and never a green badge that a model has not earned. "generate" or "extractive" in manualqa.toml,
or an admin's switch on the running server, decide instead. /api/v1/health, /api/v1/deployment and
the admin page say which mode serves and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

CONFIGURABLE = ("auto", "generate", "extractive")
HOW_TO_QUALIFY = "manualqa doctor --answers QUESTIONS.jsonl"


@dataclass(frozen=True)
class ModeDecision:
    mode: Literal["generate", "extractive"]  # what answers run in now
    configured: str  # answer.mode: auto, generate or extractive
    reason: str  # one sentence for people: why this mode
    qualification: dict[str, Any] | None = field(default=None)  # gate 4's last verdict for this profile

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "configured": self.configured, "reason": self.reason,
                "qualification": self.qualification}


def _verdict(data_dir: Path, profile: Any) -> dict[str, Any] | None:
    """Gate 4's last verdict for exactly this profile text, in short (None: never measured)."""
    from gateway.records.deployments import qualification

    last = qualification(data_dir, profile.name, profile.content_hash)
    if last is None:
        return None
    gate = last.get("gate") or {}
    return {"status": gate.get("status"), "checked_at": last.get("checked_at"), "detail": gate.get("detail"),
            "metrics": (gate.get("evidence") or {}).get("metrics")}


def decide_mode(configured: str, data_dir: Path, profile: Any | None, profile_error: str | None = None
                ) -> ModeDecision:
    """The mode in force: the configured one, or under "auto" what the profile's gate 4 verdict allows.

    The last verdict is reported whatever decides, so that an admin who pinned a mode still sees it."""
    if profile is None:
        verdict = None
        if configured == "auto":
            return ModeDecision("extractive", configured, f"no deployment profile resolves ({profile_error})")
    else:
        verdict = _verdict(data_dir, profile)
    if configured in ("generate", "extractive"):
        fixed: Literal["generate", "extractive"] = "generate" if configured == "generate" else "extractive"
        return ModeDecision(fixed, configured, f"answer.mode is set to {configured}", verdict)
    if verdict is None:
        return ModeDecision("extractive", configured,
                            f"profile {profile.name!r} has not been qualified for generate mode "
                            f"(doctor's gate 4, answers: {HOW_TO_QUALIFY})")
    when = verdict["checked_at"]
    if verdict["status"] == "pass":
        return ModeDecision("generate", configured, f"profile {profile.name!r} passed gate 4 (answers) on {when}",
                            verdict)
    what = "failed gate 4 (answers)" if verdict["status"] == "fail" else "could not be measured by gate 4 (answers)"
    return ModeDecision("extractive", configured, f"profile {profile.name!r} {what} on {when}", verdict)
