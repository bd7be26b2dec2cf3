"""Embeddings, index versions and hybrid search.

onnxruntime (>= 1.29 on Linux) queues telemetry on disk from its first import: a device id and
events naming the OS and the program, in ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, to be sent to
Microsoft once a network is there. An appliance on a factory floor sends nothing it was not asked to:
`ORT_DISABLE_TELEMETRY=1` before that import turns all of it off (no id, no queue, no uploader;
tests/test_onnx_telemetry.py). Set here, in the package every onnxruntime import of the gateway goes
through; an operator's explicit value is kept.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
