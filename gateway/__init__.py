"""manualqa gateway: configuration, CLI, answer pipeline, answer log, HTTP app, replay."""

import os

__version__ = "0.1.0"

# llama.cpp's OpenMP threads, when generation runs on a worker thread (as it does in the server and the
# answer pipeline) and they are free to migrate between cores, decode at about half the speed of the same
# runtime called from the main thread (measured on 2 cores; see docs/benchmarks.md, server section).
# Binding them fixes it. It must be set before libgomp is loaded (by torch or llama_cpp), hence here, in
# the application package; set OMP_PROC_BIND yourself to choose otherwise.
os.environ.setdefault("OMP_PROC_BIND", "true")
