"""ChainedScriptedRuntime: the ScriptedRuntime whose artifact chain carries the quantization and
tokenizer given in its options (options.chain), for tests that compare artifact chains (bench)."""

from __future__ import annotations

from runtimes.base import ArtifactChain
from tests.support.scripted import ScriptedRuntime


class ChainedScriptedRuntime(ScriptedRuntime):
    backend = "scripted"

    def describe(self) -> ArtifactChain:
        base = super().describe().data
        return ArtifactChain({**base, **dict(self.options.get("chain") or {})})

    @property
    def n_threads(self) -> int | None:
        value = self.options.get("n_threads")
        return int(value) if value else None
