"""manualqa gateway: configuration, CLI, answer pipeline, answer log, HTTP app, replay."""

from __future__ import annotations

from typing import TypeAlias

__version__ = "0.1.0"

# A JSON value whose shape the code does not fix (a manifest, a report, a decoded request body):
# what json.loads gives and json.dumps takes. Code that reads one narrows it with isinstance; a known
# shape is a TypedDict or a msgspec Struct instead. msgspec cannot resolve this recursive alias, so a
# Struct's open field says `dict[str, object]` (the same OpenAPI schema).
JSONValue: TypeAlias = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]

# OMP_PROC_BIND is not set here (it was, from 2026-11-30 to 2026-12-03). With it, the first OpenMP library
# loaded in this process (faiss's libgomp, on `import faiss`) binds the loading thread to the first core:
# every thread started after it, the runtime worker and the parse workers inherit that one core, so llama.cpp
# took one thread (runtimes.defaults.physical_cores follows the affinity) and prefilled at half speed.
# It was set because llama.cpp's OpenMP threads, run from a worker thread of this process and left free to
# migrate, decoded at half speed; llama.cpp now runs on the main thread of its own worker process
# (runtimes.worker_main), where that does not arise. tests/test_cpu_affinity.py holds the first.
