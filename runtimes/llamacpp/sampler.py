"""Grammar-constrained sampling at the speed of unconstrained sampling, for llama-cpp-python.

llama-cpp-python (0.3.36) puts a GBNF grammar inside its sampler chain: penalties -> grammar ->
greedy/dist. The grammar sampler then walks its parse stacks for every token of the vocabulary at
every decoded token (49k for SmolLM2, 151k for Qwen2.5), which halves decode speed with the
gateway's citation grammar (docs/bench/experiments/grammar_cost.md). llama.cpp's own common sampler
does it the other way round: draw a token from the chain without the grammar, check only that one
token against the grammar, and constrain the whole vocabulary only when it is refused. The token
drawn is the same: at temperature 0 the best token overall, when the grammar allows it, is the best
allowed one; when sampling, rejecting and redrawing from the constrained distribution draws from
that distribution.

`install(llm, lib)` swaps that order into one `Llama` object (its `_init_sampler`, the only place
llama-cpp-python builds the chain); without a grammar nothing changes.
"""

from __future__ import annotations

import ctypes
import math
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # llama-cpp-python's own annotations (py.typed)
    from llama_cpp import Llama
    from llama_cpp._internals import LlamaContext
    from llama_cpp.llama_cpp import llama_token_data_array
    from llama_cpp.llama_grammar import LlamaGrammar

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class SamplerChain(Protocol):
    """What is used of llama-cpp-python's sampler chain (llama_cpp._internals.LlamaSampler)."""

    sampler: object  # the llama_sampler* handed to llama_sampler_apply / _accept

    def close(self) -> None: ...


class GrammarCheckedSampler:
    """The object `Llama.sample` calls `.sample(ctx, idx)` on: the chain without the grammar draws,
    the grammar checks the token drawn, and constrains the draw only when it refuses that token."""

    def __init__(self, lib: ModuleType, chain: SamplerChain, grammar: object, n_vocab: int) -> None:
        self._lib, self._chain = lib, chain  # the llama_cpp module; the chain has no grammar in it
        self._grammar = grammar  # a llama_sampler* from llama_sampler_init_grammar, owned here
        self._n_vocab = n_vocab
        self._data = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._ids = np.arange(n_vocab, dtype=np.intc)
        self._single = lib.llama_token_data()
        self.drawn = 0  # tokens drawn
        self.refused = 0  # of which the grammar refused the first draw (the whole vocabulary constrained)

    def _candidates(self, ctx: LlamaContext, idx: int) -> llama_token_data_array:
        """All tokens with the logits at `idx`, as llama_sampler_sample builds them."""
        logits = self._lib.llama_get_logits_ith(ctx.ctx, idx)
        data = self._data
        data["id"] = self._ids
        data["logit"] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
        data["p"] = 0.0
        pointer = data.ctypes.data_as(ctypes.POINTER(self._lib.llama_token_data))
        candidates: llama_token_data_array = self._lib.llama_token_data_array(
            data=pointer, size=self._n_vocab, selected=-1, sorted=False)
        return candidates

    def _allows(self, token: int) -> bool:
        single = self._single
        single.id, single.logit, single.p = token, 1.0, 0.0
        one = self._lib.llama_token_data_array(data=ctypes.pointer(single), size=1, selected=-1, sorted=False)
        self._lib.llama_sampler_apply(self._grammar, ctypes.byref(one))
        return not math.isinf(single.logit)

    def sample(self, ctx: LlamaContext, idx: int = -1) -> int:
        lib, chain = self._lib, self._chain.sampler
        self.drawn += 1
        cur = self._candidates(ctx, idx)
        lib.llama_sampler_apply(chain, ctypes.byref(cur))
        token = int(cur.data[cur.selected].id)
        if not self._allows(token):
            self.refused += 1
            cur = self._candidates(ctx, idx)
            lib.llama_sampler_apply(self._grammar, ctypes.byref(cur))
            lib.llama_sampler_apply(chain, ctypes.byref(cur))
            token = int(cur.data[cur.selected].id)
        lib.llama_sampler_accept(self._grammar, token)
        lib.llama_sampler_accept(chain, token)
        return token

    def close(self) -> None:
        grammar, self._grammar = self._grammar, None
        if grammar is not None:
            self._lib.llama_sampler_free(grammar)
        self._chain.close()

    def __del__(self) -> None:
        self.close()


DRAW_THEN_CHECK = "draw, then check the grammar (llama.cpp's common sampler order)"
WHOLE_VOCABULARY = "grammar over the whole vocabulary at every token (llama-cpp-python's chain)"


def install(llm: Llama, lib: ModuleType) -> str:
    """Make `llm` (a llama_cpp.Llama) draw first and check the grammar after, as llama.cpp does; which
    order it samples in now (a llama-cpp-python without the hooks this needs keeps its own)."""
    stock = getattr(llm, "_init_sampler", None)
    needed = ("llama_sampler_init_grammar", "llama_sampler_apply", "llama_sampler_accept", "llama_get_logits_ith",
              "llama_token_data", "llama_token_data_array", "llama_sampler_free")
    if stock is None or not all(hasattr(lib, name) for name in needed) or not hasattr(llm, "_model"):
        return WHOLE_VOCABULARY

    def init_sampler(*args: object, grammar: LlamaGrammar | None = None,
                     **kwargs: object) -> SamplerChain | GrammarCheckedSampler:
        chain: SamplerChain = stock(*args, grammar=None, **kwargs)
        if grammar is None:
            return chain
        checker = lib.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not checker:
            chain.close()
            raise ValueError("llama.cpp could not build a sampler for the output grammar")
        sampler = GrammarCheckedSampler(lib, chain, checker, llm.n_vocab())
        llm.__dict__["grammar_sampler"] = sampler  # the last one, for its counters
        return sampler

    llm.__dict__["_init_sampler"] = init_sampler  # this object's own, in place of the class's method
    return DRAW_THEN_CHECK
