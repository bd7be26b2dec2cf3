"""onnxruntime-genai backend (an optional extra): the runtime, the model folder's chain and the session
log that says where each node ran (gate 2).

onnxruntime's telemetry is turned off before the backend imports it, as retrieval/__init__.py says why
(an operator's explicit ORT_DISABLE_TELEMETRY is kept)."""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
