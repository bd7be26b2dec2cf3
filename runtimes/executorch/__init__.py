"""ExecuTorch backend (an optional extra): the runtime, the .pte file's chain and the sampler it needs."""
