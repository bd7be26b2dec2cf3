"""`manualqa doctor`: the three gates a deployment profile must pass, and the responsibility record.

1. the artifact exists, has the expected sha256, loads on the locked runtime version and answers a
   smoke prompt;
2. the intended backend really does the work (no silent CPU fallback);
3. the rollback profile exists and passes gate 1;
4. answers: a replay of a gold question set on the profile clears the bar of its [answers] table
   (runtimes.answer_bar). The replay needs the gateway's pipeline and index, so the gateway hands
   the gate in (gateway.qualification.answers_gate); without a question set it is "skipped", not
   failed: gates 1-3 say a profile can be deployed, gate 4 that its green answers can be trusted
   ("qualified").
Every failure, expected or not, becomes a gate verdict with its reason: doctor never crashes.

Gate 1 is in gateway.qualification.load_gate, the verdicts and the record in
gateway.qualification.verdicts; here are gates 2 and 3 and `run_doctor`, which runs all four.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.qualification.load_gate import SMOKE_PROMPT, gate_one, release
from gateway.qualification.verdicts import DoctorReport, GateResult, error_text
from runtimes.base import Runtime
from runtimes.device_info import describe_device
from runtimes.profiles import Profile, ProfileError


def gate_two(profile: Profile, runtime: Runtime) -> GateResult:
    try:
        check = runtime.verify_backend()
    except Exception as exc:  # noqa: BLE001
        return GateResult(2, "fail", f"verify_backend() failed: {error_text(exc)}")
    return GateResult(2, "pass" if check.passed else "fail", check.detail, dict(check.evidence))


def gate_three(profile: Profile, smoke_prompt: str, load_rollback: bool
               ) -> tuple[GateResult, dict[str, object]]:
    where = profile.rollback_location()
    entry: dict[str, object] = {"role": "rollback", "declared": profile.rollback,
                                "path": str(where) if where else ""}
    if where is None:
        return GateResult(3, "fail", "the profile names no rollback profile (rollback = \"\"): "
                                     "there is no way back"), entry
    try:
        rollback = profile.load_rollback()
    except ProfileError as exc:
        return GateResult(3, "fail", f"rollback profile unusable: {exc}"), entry
    entry.update(name=rollback.name, backend=rollback.backend, target_device=rollback.target_device,
                 artifact=rollback.artifact.path, expected_sha256=rollback.artifact.sha256)
    if not load_rollback:
        return GateResult(3, "not run", f"rollback profile {rollback.name!r} is valid; "
                                        "gate 1 on it not run (load_rollback=False)"), entry
    result, found = gate_one(rollback, smoke_prompt)
    entry.update(artifact_path=found.artifact.get("path", ""), sha256=found.artifact.get("sha256", ""),
                 chain_id=found.chain.get("chain_id", ""))
    verdict = "passes" if result.passed else "fails"
    return GateResult(3, "pass" if result.passed else "fail",
                      f"rollback profile {rollback.name!r} ({where}) {verdict} gate 1: {result.detail}",
                      {"rollback_gate1": result.to_dict()}), entry


AnswersGate = Callable[[Profile], GateResult]


def run_doctor(profile: Profile, smoke_prompt: str = SMOKE_PROMPT, load_rollback: bool = True,
               answers: AnswersGate | None = None) -> DoctorReport:
    """Run the gates in order; gate 2 needs gate 1's loaded runtime, gate 3 runs regardless, gate 4
    (`answers`, handed in by the gateway) only after gate 1 passed, once gate 1's model is released."""
    gate1, found = gate_one(profile, smoke_prompt, keep_loaded=True)
    try:
        if found.runtime is None:
            gate2 = GateResult(2, "not run", "not run (gate 1 failed)")
        else:
            gate2 = gate_two(profile, found.runtime)
    finally:
        release(found)
    gate3, rollback_entry = gate_three(profile, smoke_prompt, load_rollback)
    gate4 = _gate_four(profile, answers, gate1)
    active: dict[str, object] = {
        "role": "active", "name": profile.name, "path": str(profile.path), "backend": profile.backend,
        "artifact_path": found.artifact.get("path", ""), "sha256": found.artifact.get("sha256", ""),
        "chain_id": found.chain.get("chain_id", "")}
    device: dict[str, object]
    try:
        device = dict(describe_device())
    except Exception as exc:  # noqa: BLE001 - the record says so instead of crashing
        device = {"error": error_text(exc)}
    return DoctorReport(
        profile={"name": profile.name, "path": str(profile.path), "description": profile.description,
                 "target_device": profile.target_device, "content_sha256": profile.content_hash},
        device=device,
        artifact=found.artifact,
        backend=profile.backend,
        runtime=found.versions,
        chain_id=str(found.chain.get("chain_id", "")),
        chain=found.chain,
        rollback_set=[active, rollback_entry],
        owners=dict(profile.owners),
        embedding_model=profile.embedding_model,
        gates=[gate1, gate2, gate3, gate4],
    )


def _gate_four(profile: Profile, answers: AnswersGate | None, gate1: GateResult) -> GateResult:
    if answers is None:
        return GateResult(4, "skipped", "skipped: no gold question set was given (manualqa doctor --answers "
                                        "QUESTIONS.jsonl, or answers.questions in the profile)")
    if not gate1.passed:
        return GateResult(4, "not run", "not run (gate 1 failed)")
    try:
        return answers(profile)
    except Exception as exc:  # noqa: BLE001 - a verdict, never a crashed doctor
        return GateResult(4, "fail", f"the replay could not run: {error_text(exc)}")

