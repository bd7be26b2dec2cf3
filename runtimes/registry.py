"""The one place backends are registered; a config string picks one.

Adding a backend = one module implementing runtimes.base.Runtime + one line in BACKENDS. What
is known about a backend (remote or local, install hint, versions doctor reads, environment probe)
is on its class; backend modules import their native libraries only in load(), so that reading
those facts never needs the library.
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
        raise RuntimeUnavailable(f"backend {backend!r} cannot be imported ({exc}); check that "
                                 f"{module_name} is installed") from exc
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Runtime)):
        raise RuntimeUnavailable(f"backend {backend!r}: {target} is not a runtimes.base.Runtime subclass")
    return cls


def create_runtime(backend: str, artifact: str, options: dict[str, Any] | None = None) -> Runtime:
    """A runtime ready to load(); nothing heavy happens until load()."""
    return runtime_class(backend)(artifact, options)


def is_remote(backend: str) -> bool:
    """True when the backend's model lives on another server (a backend that cannot import: False)."""
    try:
        return runtime_class(backend).remote
    except RuntimeUnavailable:
        return False
