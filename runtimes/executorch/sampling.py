"""Token choice and text pieces for backends that return raw logits (ExecuTorch).

Why here: an ExecuTorch program returns logits only; the generation config's meaning must match
llama.cpp's (temperature 0 = greedy, top-k, top-p, a repeat penalty over the last 64 tokens,
a seeded generator), and text must stream without splitting a UTF-8 character or leaking a stop
string.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from runtimes.base import GenerationConfig

if TYPE_CHECKING:
    from tokenizers import Tokenizer

PENALTY_LAST_N = 64  # llama.cpp's default repeat_last_n


class Sampler:
    """Chooses the next token from one row of logits under a GenerationConfig."""

    def __init__(self, torch: ModuleType, config: GenerationConfig, history: list[int]) -> None:
        self.torch = torch
        self.config = config
        self.history = history
        self.generator = torch.Generator().manual_seed(int(config.seed))

    def next(self, logits: Any) -> int:  # a torch.Tensor (torch is installed apart: not read by mypy)
        torch, config = self.torch, self.config
        scores = logits.to(torch.float32).clone()
        if config.repeat_penalty and config.repeat_penalty != 1.0 and self.history:
            recent = torch.tensor(sorted(set(self.history[-PENALTY_LAST_N:])), dtype=torch.long)
            values = scores[recent]
            scores[recent] = torch.where(values > 0, values / config.repeat_penalty, values * config.repeat_penalty)
        if config.temperature <= 0:
            token = int(torch.argmax(scores).item())
        else:
            scores = scores / config.temperature
            if config.top_k > 0:
                kth = torch.topk(scores, min(config.top_k, scores.numel())).values[-1]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            if 0 < config.top_p < 1:
                ordered, order = torch.sort(probs, descending=True)
                drop = ordered.cumsum(0) - ordered > config.top_p
                ordered = ordered.masked_fill(drop, 0.0)
                probs = torch.zeros_like(probs).scatter(0, order, ordered)
            token = int(torch.multinomial(probs, 1, generator=self.generator).item())
        self.history.append(token)
        return token


class TextStream:
    """Output tokens -> text pieces; holds back an unfinished character and a possible stop string."""

    def __init__(self, tokenizer: Tokenizer, stop: list[str]) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.ids: list[int] = []
        self.sent = 0  # characters of the decoded text already given out

    def _text(self) -> str:
        return str(self.tokenizer.decode(self.ids, skip_special_tokens=True))

    def push(self, token: int) -> tuple[str, bool]:
        """The new text safe to show, and whether a stop string ended the generation."""
        self.ids.append(token)
        text = self._text()
        for stop in self.stop:
            at = text.find(stop, max(0, self.sent - len(stop)))
            if at >= 0:
                piece = text[self.sent:at] if at > self.sent else ""
                self.sent = len(text)
                return piece, True
        if text.endswith("\ufffd"):
            return "", False
        hold = max((len(s) - 1 for s in self.stop), default=0)
        keep = len(text)
        for n in range(min(hold, len(text)), 0, -1):  # the tail could still become a stop string
            if any(s.startswith(text[-n:]) for s in self.stop):
                keep = len(text) - n
                break
        piece = text[self.sent:keep] if keep > self.sent else ""
        self.sent = max(self.sent, keep)
        return piece, False

    def flush(self) -> str:
        """Whatever was held back, at the end of a generation that no stop string ended."""
        text = self._text().rstrip("\ufffd")
        piece = text[self.sent:]
        self.sent = len(text)
        return piece
