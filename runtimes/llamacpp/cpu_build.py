"""Which CPU instructions the loaded llama.cpp library was compiled for, against the stated baseline.

Why: a library built with the build machine's native set (GGML_NATIVE) travels in a bundle to
gateways whose CPUs differ, and on Sapphire Rapids its AMX path segfaults on every prompt. The
project builds for a baseline (Makefile: x86-64 AVX2/FMA/F16C/BMI2, AVX-512 and AMX off; aarch64:
the RK3588's Cortex-A76). What the library reports (llama_print_system_info) goes into the
artifact chain, so an answer or a doctor record says which kind of build produced it.
"""

from __future__ import annotations

import platform
import re
from typing import TypedDict

# Instruction sets of the portable builds (what `make` compiles); features llama.cpp reports that
# are not instruction sets (LLAMAFILE, OPENMP, REPACK...) are not compared.
BASELINE: dict[str, frozenset[str]] = {
    "x86_64": frozenset({"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"}),
    "aarch64": frozenset({"NEON", "ARM_FMA", "FP16_VA", "DOTPROD"}),  # Cortex-A76: no i8mm, no SVE
}
NOT_ISA = frozenset({"LLAMAFILE", "OPENMP", "REPACK", "ACCELERATE", "KLEIDIAI", "CPU"})
_FEATURE = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*=\s*1\b")


def compiled_features(system_info: str) -> list[str]:
    """The instruction sets switched on in llama.cpp's CPU section ("AVX2 = 1 | ...")."""
    cpu = system_info.split("CPU :", 1)[-1]
    return sorted({m for m in _FEATURE.findall(cpu) if m not in NOT_ISA})


class CpuBuild(TypedDict):
    """What a build was compiled for, against this machine's stated baseline."""

    features: list[str]  # the instruction sets switched on
    build: str  # "portable" | "beyond-baseline" | "unknown" (no baseline stated for the architecture)
    beyond: list[str]  # the features beyond the baseline
    arch: str


def classify(system_info: str, machine: str | None = None) -> CpuBuild:
    """{"features": [...], "build": "portable" | "beyond-baseline" | "unknown", "beyond": [...]}."""
    arch = (machine or platform.machine()).lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    features = compiled_features(system_info)
    base = BASELINE.get(arch)
    if base is None:
        return {"features": features, "build": "unknown", "beyond": [], "arch": arch}
    beyond = sorted(set(features) - base)
    return {"features": features, "build": "beyond-baseline" if beyond else "portable", "beyond": beyond,
            "arch": arch}


def describe(info: CpuBuild) -> str:
    """One line for doctor's record."""
    if info["build"] == "portable":
        return f"CPU build: portable {info['arch']} baseline ({', '.join(info['features'])})"
    if info["build"] == "beyond-baseline":
        return (f"CPU build beyond the portable baseline: {', '.join(info['beyond'])} "
                "(a native build: valid only on a CPU that passed doctor)")
    return f"CPU build: no stated baseline for {info['arch']}"
