"""llama.cpp's log, captured through its log callback, read for device and buffer placement.

llama.cpp says where it put the model only in its log ("CUDA0 model buffer size = ...",
"offloaded 30/31 layers to GPU", "layer 3 assigned to device CPU"). Gate 2 needs that evidence
to tell a real GPU run from a silent CPU fallback, so loads run inside `capture()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import re
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TypedDict

_lock = threading.Lock()  # one capture at a time: the callback is process-wide
_sink: list[str] | None = None
_callback: object = None  # the ctypes callback object, kept alive for as long as llama.cpp may call it
_installed_with: ModuleType | None = None

_MODEL_BUF = re.compile(r"(\S+) model buffer size\s*=\s*([\d.]+) MiB")
_KV_BUF = re.compile(r"(\S+) KV buffer size\s*=\s*([\d.]+) MiB")
_COMPUTE_BUF = re.compile(r"(\S+) compute buffer size\s*=\s*([\d.]+) MiB")
_LAYER_DEV = re.compile(r"layer\s+\d+ assigned to device (\S+?),")
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_USING_DEV = re.compile(r"using device (\S+) \(([^)]*)\)")


log = logging.getLogger("llama.cpp")
_WARN, _ERROR = 3, 4  # ggml_log_level: NONE, DEBUG, INFO, WARN, ERROR, CONT


def _on_log(level: int, text: bytes, user_data: object) -> None:
    sink = _sink
    if sink is not None and text:
        sink.append(text.decode("utf-8", errors="replace"))
    elif level in (_WARN, _ERROR) and text:
        message = text.decode("utf-8", errors="replace").rstrip()
        log.log(logging.ERROR if level == _ERROR else logging.WARNING, "%s", message)


def install(llama_cpp: ModuleType) -> None:
    """Route llama.cpp's log to our callback (others, e.g. `llm`, may have replaced it)."""
    global _callback, _installed_with
    if _callback is None:
        _callback = llama_cpp.llama_log_callback(_on_log)
    llama_cpp.llama_log_set(_callback, ctypes.c_void_p(0))
    _installed_with = llama_cpp


@contextlib.contextmanager
def capture(llama_cpp: ModuleType) -> Iterator[list[str]]:
    """Collect llama.cpp's log lines while the block runs (e.g. a model load)."""
    global _sink
    with _lock:
        install(llama_cpp)
        lines: list[str] = []
        _sink = lines
        try:
            yield lines
        finally:
            _sink = None


def join_lines(chunks: list[str]) -> list[str]:
    """The callback delivers fragments (continuations, progress dots); rebuild whole lines."""
    return "".join(chunks).splitlines()


class Placement(TypedDict):
    """Where llama.cpp's load log says the model went."""

    devices: list[str]
    buffers: dict[str, float]  # model buffers, MiB by buffer name
    kv_buffers: dict[str, float]
    compute_buffers: dict[str, float]
    layers_by_device: dict[str, int]
    offloaded_layers: dict[str, int] | None  # {"layers": n, "of": m}


def placement(lines: list[str]) -> Placement:
    """Devices, buffers (MiB) and layer placement found in a load log."""
    buffers: dict[str, float] = {}
    kv: dict[str, float] = {}
    compute: dict[str, float] = {}
    layers: dict[str, int] = {}
    devices: list[str] = []
    offloaded: dict[str, int] | None = None
    for line in lines:
        for pattern, into in ((_MODEL_BUF, buffers), (_KV_BUF, kv), (_COMPUTE_BUF, compute)):
            if m := pattern.search(line):
                into[m.group(1)] = round(into.get(m.group(1), 0.0) + float(m.group(2)), 2)
        if m := _LAYER_DEV.search(line):
            layers[m.group(1)] = layers.get(m.group(1), 0) + 1
        if m := _OFFLOADED.search(line):
            offloaded = {"layers": int(m.group(1)), "of": int(m.group(2))}
        if m := _USING_DEV.search(line):
            devices.append(f"{m.group(1)} ({m.group(2)})")
    for name in [*buffers, *layers]:
        base = name.split("_")[0]
        if not any(d.split(" ")[0] == base for d in devices):
            devices.append(base)
    return {
        "devices": devices,
        "buffers": buffers,
        "kv_buffers": kv,
        "compute_buffers": compute,
        "layers_by_device": layers,
        "offloaded_layers": offloaded,
    }


def is_cpu(name: str) -> bool:
    return name.upper().startswith("CPU")


def gpu_evidence(place: Placement) -> tuple[bool, str]:
    """(layers really on a non-CPU device, a one-line account of where they went)."""
    gpu_buffers = {k: v for k, v in place["buffers"].items() if not is_cpu(k) and v > 0}
    gpu_layers = sum(n for dev, n in place["layers_by_device"].items() if not is_cpu(dev))
    off = place.get("offloaded_layers") or {}
    offloaded = int(off.get("layers", 0))
    on_gpu = bool(gpu_buffers) and (gpu_layers > 0 or offloaded > 0)
    summary = ", ".join(f"{k} {v:.1f} MiB" for k, v in place["buffers"].items()) or "no buffers reported"
    if off:
        summary += f"; offloaded {off['layers']}/{off['of']} layers"
    elif place["layers_by_device"]:
        summary += "; layers " + ", ".join(f"{k}: {v}" for k, v in place["layers_by_device"].items())
    return on_gpu, summary
