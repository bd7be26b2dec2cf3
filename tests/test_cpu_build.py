"""The CPU build the loaded llama.cpp reports (runtimes.llamacpp.cpu_build), and that the one installed is portable."""

from __future__ import annotations

import os
import platform

import pytest

from runtimes.llamacpp.cpu_build import classify, compiled_features, describe

PORTABLE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
            "LLAMAFILE = 1 | OPENMP = 1 | ")
NATIVE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
          "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | ")


def test_features_are_the_instruction_sets_switched_on() -> None:
    assert compiled_features(PORTABLE) == ["AVX", "AVX2", "BMI2", "F16C", "FMA", "SSE3", "SSSE3"]
    assert "AVX512 = 0" not in PORTABLE and "AMX_INT8" in compiled_features(NATIVE)


def test_a_native_build_is_named_as_such() -> None:
    portable, native = classify(PORTABLE, "x86_64"), classify(NATIVE, "x86_64")
    assert portable["build"] == "portable" and portable["beyond"] == []
    assert native["build"] == "beyond-baseline" and "AMX_INT8" in native["beyond"] and "AVX512" in native["beyond"]
    assert "AMX_INT8" in describe(native) and "doctor" in describe(native)
    rk = classify("CPU : NEON = 1 | ARM_FMA = 1 | FP16_VA = 1 | DOTPROD = 1 | OPENMP = 1 | ", "aarch64")
    assert rk["build"] == "portable"
    assert classify("CPU : NEON = 1 | SVE = 1 | ", "aarch64")["beyond"] == ["SVE"]


def test_the_installed_llama_cpp_is_a_portable_build() -> None:
    """What `make` installs: never the build machine's native set (issue 22)."""
    if os.environ.get("LLAMA_BUILD") == "native":
        pytest.skip("a native build was asked for (make LLAMA_BUILD=native): doctor on this box vouches for it")
    llama_cpp = pytest.importorskip("llama_cpp", reason="the llm extra is not installed")
    info = llama_cpp.llama_print_system_info().decode()
    build = classify(info)
    if build["build"] == "unknown":
        pytest.skip(f"no stated baseline for {platform.machine()}")
    assert build["build"] == "portable", f"llama.cpp was compiled beyond the baseline: {build['beyond']} ({info})"
