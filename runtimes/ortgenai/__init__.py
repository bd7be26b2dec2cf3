"""onnxruntime-genai backend (an optional extra): the runtime, the model folder's chain and the session
log that says where each node ran (gate 2)."""
