"""What a search returns: ranked passages that always know their manual and page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ingest.models import OCR_MIN_CONFIDENCE

# The default `embedding.model`, written once: all-MiniLM-L6-v2 quantized to int8, built into manualqa
# (retrieval/models/minilm_l6_int8) and run on onnxruntime, no torch (retrieval.embedders.onnx). Here, in
# this light module, so that gateway.settings takes its default from it without importing numpy;
# runtimes.profile_spec keeps a copy (runtimes does not import retrieval) that tests/test_embedders.py checks.
DEFAULT_EMBEDDING_MODEL = "onnx:minilm-l6-int8"


class RetrievalError(Exception):
    """A search or index operation that cannot proceed; the message is shown to the user."""
    http_status = 400  # the gateway.errors protocol (this room does not import gateway)
    code = "retrieval_error"


class NoIndexError(RetrievalError):
    """No index version is active yet (a state to fix by ingesting, not a malformed request)."""

    http_status = 409


@dataclass
class Hit:
    chunk_id: str
    manual: str  # original file name, e.g. "voron0_setup_guide.pdf"
    title: str
    manual_sha256: str
    page: int  # 1-based PDF page index
    heading: str
    text: str
    score: float  # fused (reciprocal-rank fusion) score
    dense_rank: int | None  # 1-based rank on the dense side, None when not in its candidates
    lexical_rank: int | None
    dense_score: float | None  # cosine similarity of the query and the chunk (always computed)
    # The number printed on the page when it differs from `page` (PDF page 12 printed "11"); None
    # when the PDF defines no labels, the index predates them, or the label is just str(page).
    page_label: str | None = None
    # The reranker's logit when one re-ordered this hit (retrieval.rerank); None without one.
    rerank_score: float | None = None
    # The query's best cosine to one of the passage's sentences when the sentence ranking scored it
    # (retrieval.sentence_rank); None when it did not (search.sentence_weight 0, or below the pool).
    sentence_score: float | None = None
    # The IDF-weighted share of the question's words the passage holds, when the sentence step scored
    # it with search.term_weight > 0 (retrieval.term_coverage); None otherwise. For a question in a language
    # with its own stemmer (German ...), the hits kept are read again with it (own_language_coverage).
    term_score: float | None = None
    # "ocr" when the passage was read from the page image by Tesseract (ingest.ocr), else "text";
    # then ocr_confidence is its mean word confidence (0-100) and ocr_doubtful the [start, end) in
    # `text` of its words read less surely than ingest.ocr_min_confidence (None for text passages).
    source: str = "text"
    ocr_confidence: float | None = None
    ocr_doubtful: list[list[int]] | None = None
    # ISO 639-1 code of the passage's language ("zh", "de", "en"; ingest.text.languages): the evidence
    # is quoted in it, whatever the question's; "" for a version written before languages.
    language: str = ""

    def to_dict(self) -> dict[str, Any]:
        # Every field is a str, number or None (ocr_doubtful: a list, copied), so a shallow copy is what
        # asdict() gives, at a tenth of its cost: asdict() deep-copies each value, and a search returns k.
        data = dict(self.__dict__)
        if self.ocr_doubtful is not None:
            data["ocr_doubtful"] = [list(span) for span in self.ocr_doubtful]
        return data


def shown_label(label: str | None, page: int) -> str | None:
    """The printed label worth showing beside the PDF page index: None when it adds nothing."""
    return label if label and label != str(page) else None


# Which rankings a search fuses: both (the product), or one side alone (experiments and tests).
SearchMode = Literal["hybrid", "dense", "lexical"]
# Which chunks a companion embedder ranks for an English question: those not in English, or all.
CompanionScope = Literal["other", "all"]


@dataclass(frozen=True)
class SearchParams:
    """What is decided at search time; defaults chosen on eval/dev (docs/bench/retrieval_eval.md).

    The one parameter object of retrieval.search.search / search_with_timings: the configured gateway
    passes its `search` section, an experiment a variant (``dataclasses.replace(SearchParams(), k=10)``).
    """

    k: int = 5
    candidates: int = 50
    rrf_k: int = 10  # 10 > 30 > 60 on eval/dev: a small k trusts each side's top ranks
    # Reciprocal-rank fusion weights of the dense and the lexical ranking, and the share of the
    # other candidates' scores on its page that a chunk receives.
    dense_weight: float = 1.0
    lexical_weight: float = 1.0
    page_share: float = 0.0
    # The cross-encoder that re-orders the fused top `rerank_pool` (retrieval.rerank): "builtin",
    # "off" or a folder; its score is mixed with rerank_weight * -ln(fused rank). Pool and weight
    # chosen on eval/dev (docs/bench/experiments/reranker.md). Off by default: the built-in model gained on dev
    # (MRR +0.016) but lost on eval/test (MRR -0.016), so it does not ship switched on.
    rerank: str = "off"
    rerank_pool: int = 10
    rerank_weight: float = 4.0
    # The fused top `sentence_pool` re-ordered by fused score / best fused score + sentence_weight x
    # the query's best cosine to one of the passage's sentences (retrieval.sentence_rank), whose
    # vectors the index stores. Chosen on the summed MRR of eval/dev and eval/dev2 (pools 10 and 20,
    # weights 1-4 within 0.006 of each other); 0 turns it off (docs/bench/experiments/sentence_rank.md).
    sentence_weight: float = 4.0
    sentence_pool: int = 20
    # Added to that key: term_weight x the IDF-weighted share of the question's words the passage holds
    # (retrieval.term_coverage). Chosen the same way among 0-6 (docs/bench/experiments/sentence_terms.md);
    # 0 turns it off.
    term_weight: float = 3.0
    # A chunk read by OCR whose mean word confidence is under this ranks at half its fused score, as a
    # contents page does: OCR of a schematic or a wiring diagram is mostly noise that matches anything
    # (docs/bench/experiments/ocr_rank.md). 0 ranks OCR text like any other.
    ocr_doubt: float = OCR_MIN_CONFIDENCE
    # "hybrid" fuses the dense and the lexical ranking; "dense" or "lexical" ranks by one side alone
    # (experiments and tests compare the sides; the sentence step runs in hybrid only).
    mode: SearchMode = "hybrid"
    # With a companion embedder (embedding.companion; retrieval.companion), a third ranking beside the two:
    # the companion's, fused with companion_weight for a question not in English (then the primary's
    # ranking keeps companion_dense_weight of dense_weight) and companion_weight_en for an English one,
    # which it ranks among the chunks not in English only when companion_scope_en is "other" (English
    # manuals are then searched as without a companion), among all when "all". Chosen on the development
    # halves (docs/bench/experiments/dual_dense.md; companion_weight 2 -> 3 when the six language halves were
    # there: docs/bench/experiments/companion_weight.md). Without a companion these change nothing.
    companion_weight: float = 3.0
    companion_dense_weight: float = 1.0
    companion_weight_en: float = 1.0
    companion_scope_en: CompanionScope = "other"
    # A question outside English skips the built-in embedder's sentence step (gateway.index_parts); with a
    # companion, its best sentence as the companion reads it takes that place, at this weight. Chosen on the
    # eight language development halves among 2-20 (hit@1: Chinese 119 -> 122 of 140, German 95 -> 102 of 132;
    # docs/bench/experiments/companion_sentence_rank.md); 0 turns it off.
    companion_sentence_weight: float = 10.0
    # A question that names manuals of the catalog ("VORON 热床中心坐标是多少？") and is not scoped otherwise is
    # searched among them, the rest filling up to k (retrieval.named; docs/bench/experiments/named_manuals.md).
    named_manuals: bool = True
    # A Chinese question's words in English (its Latin words and a dictionary's reading of its Chinese ones,
    # retrieval.glossary), searched lexically among the passages not in Chinese and fused at this weight: a
    # Chinese question about an English manual beside Chinese ones; the same words name manuals (named_manuals:
    # "活塞板" reads "piston"). Chosen among 1-6 on one gateway of the
    # development manuals (zh->en hit@5 13 -> 20 of 30, Chinese hit@1 120 -> 119 of 140;
    # docs/bench/experiments/glossary.md); 0 turns it off.
    glossary_weight: float = 3.0


# Key in search_with_timings' second value (beside the timings): the best cosine of any candidate in
# scope, the closest passage whatever order is kept (the answer's not-found check reads it).
CLOSEST = "closest_cosine"


def failed_agreement(record: object) -> bool:
    """True for a conversion record (manualqa_embedder.json) whose agreement check with its source failed: its
    vectors are wrong on the machine that converted it, so it is never searched with."""
    check = record.get("check") if isinstance(record, dict) else None
    return isinstance(check, dict) and float(check.get("min_cosine", 1.0)) < float(check.get("floor", 0.0))
