"""llama.cpp backend (llama-cpp-python): the runtime, the model it loads, its load-log reader, the
grammar-checked sampler, the GGUF header reader and the CPU build the loaded library reports.

`LlamaCppRuntime` is imported from `runtimes.llamacpp.runtime` (the registry's path) so that reading a
GGUF header or the CPU build never imports the runtime.
"""
