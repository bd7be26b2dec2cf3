"""What the board offers the rkllm backend: the runtime library, the RKNPU driver, the NPU load.

Read from the kernel's own files so `doctor` can say exactly which piece is missing. Every kernel
path is resolved under a `driver_root` (default "/") so tests can point it at a fake tree.
"""

from __future__ import annotations

import ctypes.util
import os
import re
from pathlib import Path
from typing import TypedDict

from runtimes.hashing import file_sha256

LIB_NAME = "librkllmrt.so"
STANDARD_LIB_PATHS = ("/usr/lib/librkllmrt.so", "/usr/local/lib/librkllmrt.so",
                      "/usr/lib/aarch64-linux-gnu/librkllmrt.so", "/lib/librkllmrt.so")
DRIVER_VERSION_FILES = ("sys/kernel/debug/rknpu/version", "proc/rknpu/version")
NPU_LOAD_FILES = ("sys/kernel/debug/rknpu/load", "proc/rknpu/load")



def _under(root: str | os.PathLike[str], rel: str) -> Path:
    return Path(root) / rel


def find_library(lib_path: str | None = None) -> tuple[str | None, list[str]]:
    """(path found or None, places looked): option lib_path, env RKLLM_LIB, then standard names."""
    looked: list[str] = []
    for candidate in (lib_path, os.environ.get("RKLLM_LIB")):
        if candidate:
            looked.append(candidate)
            if Path(candidate).is_file():
                return str(Path(candidate).resolve()), looked
            if lib_path and candidate == lib_path:
                # An explicit path that does not exist is an answer, not a hint to search elsewhere.
                return None, looked
    found = ctypes.util.find_library("rkllmrt")
    looked.append("ldconfig/find_library('rkllmrt')")
    if found:
        # find_library gives a soname; resolve it through the standard directories.
        for d in ("/usr/lib", "/usr/local/lib", "/usr/lib/aarch64-linux-gnu", "/lib"):
            p = Path(d) / found
            if p.is_file():
                return str(p.resolve()), looked
        return found, looked
    for standard in STANDARD_LIB_PATHS:
        looked.append(standard)
        if Path(standard).is_file():
            return standard, looked
    return None, looked


def library_missing_message(looked: list[str]) -> str:
    return (f"RKLLM runtime library {LIB_NAME} not found (looked in: {', '.join(looked)}); "
            "install Rockchip's rknn-llm runtime for aarch64 (or set lib_path / RKLLM_LIB)")


def driver_version(driver_root: str = "/") -> tuple[str | None, str | None]:
    """(version, file it came from). The file reads like 'RKNPU driver: v0.9.8'."""
    for rel in DRIVER_VERSION_FILES:
        p = _under(driver_root, rel)
        try:
            text = p.read_text(errors="replace").strip()
        except OSError:
            continue
        m = re.search(r"v?(\d+\.\d+(?:\.\d+)?)", text)
        return (m.group(1) if m else text or None), str(p)
    return None, None


def driver_missing_message(driver_root: str = "/") -> str:
    paths = ", ".join("/" + rel for rel in DRIVER_VERSION_FILES)
    where = "" if str(driver_root) in ("/", "") else f" under {driver_root}"
    return f"RKNPU driver not found ({paths} absent{where})"


def read_npu_load(driver_root: str = "/") -> tuple[dict[str, int] | None, str]:
    """({core: percent}, detail). The file reads like 'NPU load:  Core0: 35%, Core1:  0%, Core2:  0%,'."""
    for rel in NPU_LOAD_FILES:
        p = _under(driver_root, rel)
        try:
            text = p.read_text(errors="replace")
        except PermissionError:
            return None, f"{p} exists but is not readable (debugfs needs root)"
        except OSError:
            continue
        cores = {f"Core{n}": int(v) for n, v in re.findall(r"Core\s*(\d+)\s*:\s*(\d+)\s*%", text)}
        if not cores:
            m = re.search(r"(\d+)\s*%", text)
            if m:
                cores = {"Core0": int(m.group(1))}
        if not cores:
            return None, f"{p} has no load figures: {text.strip()[:80]!r}"
        return cores, str(p)
    return None, "no NPU load file (" + ", ".join("/" + r for r in NPU_LOAD_FILES) + ")"


class BoardReport(TypedDict):
    """What probe_environment found on the board."""

    library: str | None
    library_sha256: str | None
    library_looked_in: list[str]
    driver_version: str | None
    driver_version_file: str | None
    npu_load_readable: bool
    npu_load: dict[str, int] | None
    missing: list[str]


def probe_environment(lib_path: str | None = None, driver_root: str = "/") -> BoardReport:
    """What doctor prints for the rkllm backend: library, its sha256, driver, load file, what is missing."""
    lib, looked = find_library(lib_path)
    drv, drv_file = driver_version(driver_root)
    load, load_detail = read_npu_load(driver_root)
    missing: list[str] = []
    if lib is None:
        missing.append(library_missing_message(looked))
    if drv is None:
        missing.append(driver_missing_message(driver_root))
    if load is None:
        missing.append(f"NPU load not readable: {load_detail}")
    sha = None
    if lib is not None and Path(lib).is_file():
        sha = file_sha256(lib)
    return {
        "library": lib,
        "library_sha256": sha,
        "library_looked_in": looked,
        "driver_version": drv,
        "driver_version_file": drv_file,
        "npu_load_readable": load is not None,
        "npu_load": load,
        "missing": missing,
    }
