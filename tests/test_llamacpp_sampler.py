"""The grammar checked after the draw (runtimes.llamacpp.sampler), on the real default GGUF: the same
tokens as llama-cpp-python's whole-vocabulary order at temperature 0, and the grammar still holds
when the model wants something else."""

from __future__ import annotations

import re

import pytest

from gateway.answer.grammar import DECLINE, citation_grammar
from runtimes.base import GenerationConfig, GenerationStats
from runtimes.llamacpp import sampler as llamacpp_sampler
from runtimes.registry import create_runtime

pytestmark = pytest.mark.slow

PASSAGES = (
    "[1] (Ender 3 Manual, p. 6) Level the bed with a sheet of paper at each corner. Tighten the four "
    "levelling knobs until the nozzle just drags on the paper. The nozzle temperature for PLA is 200 C.\n"
    "[2] (Ender 3 Manual, p. 9) The power supply switch must be set to 230 V or 115 V to match the mains."
)
ASKS = [
    "What nozzle temperature should I use for PLA?",
    "How do I level the bed?",
    "Which voltage should the power supply switch be set to?",
]


NO_DEADLINE_S = 3600.0  # the default 120 s is reachable on a loaded 2-core box (grammar over the whole vocabulary)


def _messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer from the passages only. End every sentence with [n]."},
            {"role": "user", "content": f"{PASSAGES}\n\nQuestion: {question}"}]


@pytest.fixture(scope="module")
def pair():
    """The default order and llama-cpp-python's own, on the same GGUF."""
    checked = create_runtime("llamacpp", "default", {"n_ctx": 2048})
    whole = create_runtime("llamacpp", "default", {"n_ctx": 2048, "grammar_first": True})
    checked.load()
    whole.load()
    yield checked, whole
    checked.unload()
    whole.unload()


def _run(runtime, messages, config) -> tuple[str, GenerationStats]:
    items = list(runtime.stream(messages, config))
    assert isinstance(items[-1], GenerationStats)
    assert items[-1].stop_reason != "timeout", "the generation hit its deadline (a load effect, not the sampler)"
    return "".join(items[:-1]), items[-1]


def _text(runtime, messages, config) -> str:
    return _run(runtime, messages, config)[0]


@pytest.mark.parametrize("question", ASKS)
def test_same_tokens_as_the_whole_vocabulary_order_at_temperature_0(pair, question) -> None:
    checked, whole = pair
    # no deadline that a busy box could reach: a cut answer would differ by the load, not the order
    config = GenerationConfig(max_tokens=48, temperature=0.0, seed=0, grammar=citation_grammar(2),
                              timeout_s=NO_DEADLINE_S)
    got, want = _text(checked, _messages(question), config), _text(whole, _messages(question), config)
    assert got == want
    sentences = re.split(r"(?<=\])\s+", got.strip())
    assert got.strip() == DECLINE or all(re.search(r"\[\d(?:, ?\d)*\]$", s) for s in sentences[:-1])


def test_the_grammar_holds_when_the_model_wants_another_token(pair) -> None:
    checked, _ = pair
    grammar = 'root ::= ("yes" | "no") "."\n'
    for temperature in (0.0, 0.9):
        config = GenerationConfig(max_tokens=8, temperature=temperature, seed=3, grammar=grammar,
                                  timeout_s=NO_DEADLINE_S)
        text, stats = _run(checked, _messages("What nozzle temperature should I use for PLA?"), config)
        assert text in ("yes.", "no.")
        # the model's first choice was a word, not yes/no: redrawn under the grammar
        assert stats.backend_perf["grammar_redrawn"] >= 1
        assert stats.backend_perf["grammar_drawn"] >= 2


def test_the_chain_says_which_order_the_runtime_samples_in(pair) -> None:
    checked, whole = pair
    assert checked.describe().data["runtime"]["grammar_sampling"] == llamacpp_sampler.DRAW_THEN_CHECK
    assert whole.describe().data["runtime"]["grammar_sampling"] == llamacpp_sampler.WHOLE_VOCABULARY


def test_a_llama_cpp_python_without_the_hooks_keeps_its_own_order() -> None:
    class Bare:
        pass

    assert llamacpp_sampler.install(Bare(), object()) == llamacpp_sampler.WHOLE_VOCABULARY
