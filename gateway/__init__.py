"""manualqa gateway: configuration, CLI, answer pipeline, answer log, HTTP app, replay."""

__version__ = "0.1.0"

# OMP_PROC_BIND is not set here (it was, from 2026-11-30 to 2026-12-03). With it, the first OpenMP library
# loaded in this process (faiss's libgomp, on `import faiss`) binds the loading thread to the first core:
# every thread started after it, the runtime worker and the parse workers inherit that one core, so llama.cpp
# took one thread (runtimes.defaults.physical_cores follows the affinity) and prefilled at half speed.
# It was set because llama.cpp's OpenMP threads, run from a worker thread of this process and left free to
# migrate, decoded at half speed; llama.cpp now runs on the main thread of its own worker process
# (runtimes.worker_main), where that does not arise. tests/test_cpu_affinity.py holds the first.
