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
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from runtimes.base import GenerationError, GenerationStats, Runtime, RuntimeUnavailable
from runtimes.device_info import describe_device, installed_versions
from runtimes.profiles import Profile, ProfileError

SMOKE_PROMPT = "In one short sentence: why do machines come with a user manual?"
SMOKE_MAX_TOKENS = 24
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


def _create_runtime(backend: str, artifact: str, options: Mapping[str, object]) -> Runtime:
    from runtimes.registry import create_runtime

    return create_runtime(backend, artifact, options)


def _error(exc: BaseException) -> str:
    if isinstance(exc, (RuntimeUnavailable, GenerationError, ProfileError)) and str(exc):
        return str(exc)  # already written for a human
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Loaded:
    """What gate 1 found out, kept for gate 2 and for the record."""

    artifact: dict[str, object] = field(default_factory=dict)
    versions: dict[str, object] = field(default_factory=dict)
    chain: dict[str, object] = field(default_factory=dict)
    runtime: Runtime | None = None


def _check_artifact(profile: Profile, found: _Loaded, problems: list[str]) -> None:
    spec = profile.artifact
    info: dict[str, object] = {"declared": spec.path, "expected_sha256": spec.sha256, "source": spec.source,
                               "conversion": spec.conversion, "quantization": spec.quantization}
    found.artifact = info
    if profile.is_remote:
        info.update(path=spec.path, note="held by the upstream server; no local file to check")
        return
    try:
        path = profile.artifact_path()
    except ProfileError as exc:
        problems.append(str(exc))
        return
    info["path"] = path
    from runtimes.hashing import file_sha256, tree_sha256, tree_size

    if os.path.isdir(path):  # a model folder (ortgenai): the digest of its files (runtimes.hashing.tree_sha256)
        info["size_bytes"] = tree_size(path)
        actual = info["sha256"] = tree_sha256(path)[0]
    elif not os.path.isfile(path):
        problems.append(f"artifact not found: {path}")
        return
    else:
        info["size_bytes"] = os.path.getsize(path)
        actual = info["sha256"] = file_sha256(path)
    if not spec.sha256:
        problems.append(f"artifact.sha256 is not set in the profile; this file's sha256 is {actual}")
    elif actual != spec.sha256:
        problems.append(f"artifact sha256 mismatch for {path}: expected {spec.sha256}, actual {actual}")


def _flatten(data: object, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
    else:
        out[prefix.rstrip(".")] = data
    return out


def _from_chain(chain: Mapping[str, object], key: str) -> str | None:
    for path, value in _flatten(chain).items():
        if path.rsplit(".", 1)[-1] == key and value not in (None, ""):
            return str(value)
    return None


def _compare_versions(locked: dict[str, str], installed: dict[str, str | None], problems: list[str],
                      final: bool) -> None:
    """A locked version that differs fails; one nobody reports fails only once the chain is in."""
    for key, want in locked.items():
        have = installed.get(key)
        if have is None:
            if final:
                problems.append(f"cannot confirm locked {key} {want}: neither the system nor the "
                                "backend's artifact chain reports it")
        elif have != want:
            problems.append(f"locked {key} is {want} but {have} is installed; install {key}=={want} "
                            "or update the profile's [runtime] lock after re-validating")


def _smoke(runtime: Runtime, profile: Profile, prompt: str) -> tuple[str, GenerationStats | None]:
    config = profile.generation_config()
    config = replace(config, max_tokens=min(config.max_tokens, SMOKE_MAX_TOKENS))
    pieces: list[str] = []
    stats: GenerationStats | None = None
    for item in runtime.stream([{"role": "user", "content": prompt}], config, threading.Event()):
        if isinstance(item, GenerationStats):
            stats = item
        else:
            pieces.append(item)
    return "".join(pieces), stats


def gate_one(profile: Profile, smoke_prompt: str = SMOKE_PROMPT, keep_loaded: bool = False
             ) -> tuple[GateResult, _Loaded]:
    """Gate 1; with keep_loaded the loaded runtime is handed on to gate 2 (caller unloads it)."""
    found = _Loaded()
    problems: list[str] = []
    evidence: dict[str, object] = {}
    answer = ""  # the smoke prompt's answer, shortened
    try:
        _check_artifact(profile, found, problems)
        env = installed_versions(profile)
        found.versions = {"locked": dict(profile.runtime), "installed": env.versions}
        evidence.update(environment=env.evidence)
        problems.extend(env.missing)
        _compare_versions(profile.runtime, env.versions, problems, final=False)
        if problems:  # never load an artifact we cannot vouch for, or on the wrong runtime
            return GateResult(1, "fail", "; ".join(problems), evidence), found
        runtime = _create_runtime(profile.backend, profile.artifact_path(), profile.runtime_options())
        runtime.load()
        found.runtime = runtime
        try:
            found.chain = runtime.describe().to_dict()
        except Exception as exc:  # noqa: BLE001 - any backend failure is a verdict
            problems.append(f"describe() failed: {_error(exc)}")
        for key in profile.runtime:  # what the loaded runtime reports is the truth
            reported = _from_chain(found.chain, key)
            if reported is not None:
                env.versions[key] = reported
        _compare_versions(profile.runtime, env.versions, problems, final=True)
        if not problems:
            text, stats = _smoke(runtime, profile, smoke_prompt)
            answer = _short(text)
            evidence["smoke"] = {"prompt": smoke_prompt, "answer": answer,
                                 "stats": stats.to_dict() if stats else None}
            if stats is None:
                problems.append("the smoke generation ended without its GenerationStats record")
            elif not text.strip():
                problems.append(f"the smoke prompt produced no text (stop reason: {stats.stop_reason})")
    except Exception as exc:  # noqa: BLE001 - a missing library, a crash in load: all are verdicts
        problems.append(f"{'load' if found.runtime is None else 'smoke prompt'} failed: {_error(exc)}")
    if problems:
        return GateResult(1, "fail", "; ".join(problems), evidence), _release(found)
    result = GateResult(1, "pass", f"{profile.backend} loaded the artifact and answered: {answer!r}",
                        evidence)
    return result, (found if keep_loaded else _release(found))


def _release(found: _Loaded) -> _Loaded:
    if found.runtime is not None:
        try:
            found.runtime.unload()
        except Exception:  # noqa: BLE001 - unloading must not mask the verdict
            pass
        found.runtime = None
    return found


def gate_two(profile: Profile, runtime: Runtime) -> GateResult:
    try:
        check = runtime.verify_backend()
    except Exception as exc:  # noqa: BLE001
        return GateResult(2, "fail", f"verify_backend() failed: {_error(exc)}")
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
        _release(found)
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
        device = {"error": _error(exc)}
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
        return GateResult(4, "fail", f"the replay could not run: {_error(exc)}")

