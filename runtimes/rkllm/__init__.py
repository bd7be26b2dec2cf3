"""Rockchip RKLLM backend: a ctypes binding to librkllmrt.so with per-version struct layouts.

`RKLLMRuntime` implements the runtime contract; `probe_environment` tells doctor which of the
library, the RKNPU driver and the NPU load file is missing on this machine.
"""

from runtimes.rkllm.probe import probe_environment
from runtimes.rkllm.runtime import RKLLMRuntime

__all__ = ["RKLLMRuntime", "probe_environment"]
