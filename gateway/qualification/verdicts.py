"""What doctor's gates say: one gate's verdict (`GateResult`) and the responsibility record (`DoctorReport`).

Kept apart from the gates themselves so that what reads a verdict (the CLI, the admin page, the
stored records) need not import what loads a model. `error_text` is how any failure reads in a
verdict, for every gate alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from runtimes.base import GenerationError, RuntimeUnavailable
from runtimes.profiles import ProfileError

TITLES = {1: "artifact loads on the locked runtime and answers",
          2: "the intended backend does the work",
          3: "the rollback profile exists and passes gate 1",
          4: "answers: a replay of a gold question set clears the profile's bar"}


GateStatus = Literal["pass", "fail", "not run", "skipped"]  # skipped: gate 4 without a question set


@dataclass
class GateResult:
    gate: int
    status: GateStatus
    detail: str
    evidence: dict[str, object] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def to_dict(self) -> dict[str, object]:
        return {"gate": self.gate, "title": TITLES[self.gate], "passed": self.passed, **asdict(self)}


@dataclass
class DoctorReport:
    """The responsibility record: what runs where, who owns it, the way back, which gate failed."""

    profile: dict[str, object]
    device: dict[str, object]  # runtimes.device_info.describe_device(), or why it could not be read
    artifact: dict[str, object]
    backend: str
    runtime: dict[str, object]  # the locked and the installed versions
    chain_id: str
    chain: dict[str, object]  # ArtifactChain.to_dict()
    rollback_set: list[dict[str, object]]
    owners: dict[str, str]
    embedding_model: str
    gates: list[GateResult]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates if g.status != "skipped")

    @property
    def qualified(self) -> bool:
        """Gate 4 passed: the model's green answers cleared the profile's bar on a gold question set."""
        return any(g.gate == 4 and g.passed for g in self.gates)

    def failed_gates(self) -> list[int]:
        return [g.gate for g in self.gates if not g.passed and g.status != "skipped"]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["gates"] = [g.to_dict() for g in self.gates]
        data["passed"] = self.passed
        data["failed_gates"] = self.failed_gates()
        data["qualified"] = self.qualified
        return data


def error_text(exc: BaseException) -> str:
    """A failure as a verdict's reason: a library error as written for a human, else its type."""
    if isinstance(exc, (RuntimeUnavailable, GenerationError, ProfileError)) and str(exc):
        return str(exc)  # already written for a human
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
