"""Doctor's gate 1: the artifact exists with the expected sha256, loads on the locked runtime version
and answers a smoke prompt.

Gate 3 runs it again on the rollback profile, and gate 2 needs the runtime it loaded, so `gate_one`
can hand that runtime on (`keep_loaded`); `release` unloads it. Nothing is loaded that the checks
before it cannot vouch for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gateway.qualification.verdicts import GateResult, error_text
from runtimes.base import GenerationStats, Runtime
from runtimes.device_info import installed_versions
from runtimes.profiles import Profile, ProfileError

SMOKE_PROMPT = "In one short sentence: why do machines come with a user manual?"
SMOKE_MAX_TOKENS = 24


def _create_runtime(backend: str, artifact: str, options: Mapping[str, object]) -> Runtime:
    from runtimes.registry import create_runtime

    return create_runtime(backend, artifact, options)


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
            problems.append(f"describe() failed: {error_text(exc)}")
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
        problems.append(f"{'load' if found.runtime is None else 'smoke prompt'} failed: {error_text(exc)}")
    if problems:
        return GateResult(1, "fail", "; ".join(problems), evidence), release(found)
    result = GateResult(1, "pass", f"{profile.backend} loaded the artifact and answered: {answer!r}",
                        evidence)
    return result, (found if keep_loaded else release(found))


def release(found: _Loaded) -> _Loaded:
    """Unload what gate 1 loaded, once its verdict is in."""
    if found.runtime is not None:
        try:
            found.runtime.unload()
        except Exception:  # noqa: BLE001 - unloading must not mask the verdict
            pass
        found.runtime = None
    return found
