"""The one place backends are registered; a config string picks one.

Adding a backend = one module implementing runtimes.base.Runtime + one line in BACKENDS. What
is known about a backend (remote or local, install hint, versions doctor reads, environment probe)
is on its class; backend modules import their native libraries only in load(), so that reading
those facts never needs the library.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from runtimes.base import Runtime, RuntimeUnavailable

BACKENDS: dict[str, str] = {
    "llamacpp": "runtimes.llamacpp.runtime:LlamaCppRuntime",
    "rkllm": "runtimes.rkllm.runtime:RKLLMRuntime",
    "openai": "runtimes.openai.runtime:OpenAIRuntime",
    "ortgenai": "runtimes.ortgenai.runtime:OrtGenAIRuntime",
    "executorch": "runtimes.executorch.runtime:ExecuTorchRuntime",
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


ISOLATION_MODES = ("process", "in-process")


def create_runtime(backend: str, artifact: str, options: Mapping[str, object] | None = None) -> Runtime:
    """A runtime ready to load(); nothing heavy happens until load().

    A backend that runs native code runs in a supervised worker process (runtimes.supervised), so
    that its crash is one failed answer, not a dead gateway. options["isolation"] = "in-process"
    opts out (benchmarks comparing the two; a debugger session), never a default.
    """
    cls = runtime_class(backend)
    isolation = str((options or {}).get("isolation") or "process")
    if isolation not in ISOLATION_MODES:
        raise RuntimeUnavailable(f"options isolation = {isolation!r}; expected one of {', '.join(ISOLATION_MODES)}")
    if cls.native and isolation == "process":
        from runtimes.supervised import SupervisedRuntime

        return SupervisedRuntime(backend, cls, artifact, options)
    return cls(artifact, options)


def is_remote(backend: str) -> bool:
    """True when the backend's model lives on another server (a backend that cannot import: False)."""
    try:
        return runtime_class(backend).remote
    except RuntimeUnavailable:
        return False
