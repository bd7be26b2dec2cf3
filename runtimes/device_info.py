"""What this machine is and which runtime versions it has, read locally (no network) for doctor."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path
from typing import TypedDict

from runtimes import machine
from runtimes.base import Environment, RuntimeUnavailable, distribution_version
from runtimes.profiles import Profile
from runtimes.registry import runtime_class


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def nvidia_gpus() -> list[dict[str, str]] | str:
    """GPUs as nvidia-smi lists them, or why there are none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "none (nvidia-smi not found)"
    try:
        out = subprocess.run([exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown (nvidia-smi failed: {exc})"
    if out.returncode != 0:
        return f"none (nvidia-smi: {(out.stderr or out.stdout).strip()[:160]})"
    gpus = []
    for line in out.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        gpus.append(dict(zip(("name", "driver_version", "memory"), parts, strict=False)))
    return gpus or "none"


class DeviceDescription(TypedDict):
    """This machine as doctor's record names it."""

    machine: str
    system: str
    hostname: str
    cpu: str
    cpu_count: int
    memory_mib: int | None
    board: str | None
    gpu: list[dict[str, str]] | str  # nvidia_gpus()
    python: str


def describe_device() -> DeviceDescription:
    mem_kib = machine.memory_total_kib()
    board = _read("/proc/device-tree/model").strip("\x00\n ")
    return {
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "hostname": platform.node(),
        "cpu": machine.cpu_model(),
        "cpu_count": machine.logical_cores(),
        "memory_mib": None if mem_kib is None else mem_kib // 1024,
        "board": board or None,
        "gpu": nvidia_gpus(),
        "python": platform.python_version(),
    }


def installed_versions(profile: Profile) -> Environment:
    """Versions readable without loading the artifact, and what is missing for the backend."""
    try:
        env = runtime_class(profile.backend).probe_environment(dict(profile.options))
    except RuntimeUnavailable as exc:
        return Environment(missing=[str(exc)])
    for key in profile.runtime:  # any other lock key that names an installed Python distribution
        if key not in env.versions and (version := distribution_version(key)) is not None:
            env.versions[key] = version
    if "nvidia_driver" in profile.runtime:
        gpus = nvidia_gpus()
        env.versions["nvidia_driver"] = gpus[0]["driver_version"] if isinstance(gpus, list) and gpus else None
    return env
