"""The one place backends are registered; a config string picks one.

Adding a backend = one module implementing runtimes.base.Runtime + one line in BACKENDS.
"""

from __future__ import annotations

import importlib
from typing import Any

from runtimes.base import Runtime, RuntimeUnavailable

BACKENDS: dict[str, str] = {
    "llamacpp": "runtimes.llamacpp:LlamaCppRuntime",
    "rkllm": "runtimes.rkllm.runtime:RKLLMRuntime",
    "openai": "runtimes.openai:OpenAIRuntime",
}

INSTALL_HINTS: dict[str, str] = {
    "llamacpp": "pip install 'manualqa[llm]'",
    "rkllm": "install Rockchip's librkllmrt.so (RKLLM runtime) on the board",
    "openai": "pip install httpx",
}


def runtime_class(backend: str) -> type[Runtime]:
    """The Runtime class for a registered name or a "package.module:Class" path."""
    target = BACKENDS.get(backend)
    if target is None:
        if ":" not in backend:
            known = ", ".join(sorted(BACKENDS))
            raise RuntimeUnavailable(f"unknown backend {backend!r}; known backends: {known}")
        target = backend
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = INSTALL_HINTS.get(backend, "check that the module is installed")
        raise RuntimeUnavailable(f"backend {backend!r} cannot be imported ({exc}); {hint}") from exc
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Runtime)):
        raise RuntimeUnavailable(f"backend {backend!r}: {target} is not a runtimes.base.Runtime subclass")
    return cls


def create_runtime(backend: str, artifact: str, options: dict[str, Any] | None = None) -> Runtime:
    """A runtime ready to load(); nothing heavy happens until load()."""
    return runtime_class(backend)(artifact, options)
