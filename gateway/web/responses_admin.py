"""Response bodies of /api/v1's admin side (manuals, jobs, index versions, fleet, system, keys), as
msgspec Structs so that the OpenAPI document types them; the answer side is gateway.web.responses.

Each Struct mirrors the dict its route returned before, key for key and in the same order, so the
JSON on the wire is unchanged. Rows whose shape is open (manifests, reports) stay `dict[str, object]`.
"""

from __future__ import annotations

from typing import Literal

import msgspec


# -- manuals and jobs --------------------------------------------------------------------------
class ManualList(msgspec.Struct):
    version: str | None
    manuals: list[dict[str, object]]


class ManualTitle(msgspec.Struct):
    """A manual as the gateway shows it after a rename: `title` shown, `pdf_title` the PDF's own."""

    sha256: str
    file_name: str
    title: str
    pdf_title: str


class UploadAccepted(msgspec.Struct):
    job: str
    job_url: str
    file_name: str
    sha256: str
    pages: int
    pages_without_text: list[int]
    # "could not read 2 pages (3, 4): <why>" (OCR off, Tesseract missing, a page image that failed)
    unread: list[str] = []
    # pages whose words the text layer glued together, read again by poppler's pdftotext (ingest.respace)
    respaced_pages: list[int] = []


class Job(msgspec.Struct):
    """One row of the `jobs` table; `result` is the ingest report once done."""

    id: str
    kind: str
    state: str
    progress: int
    total: int | None
    message: str
    created: str
    updated: str
    result: dict[str, object] | None


class IngestReportOut(msgspec.Struct):
    """retrieval.builder.IngestReport.to_dict()."""

    version: str | None
    added: list[str]
    changed: list[str]
    unchanged: list[str]
    removed: list[str]
    failed: list[dict[str, str]]
    # manuals ingested with pages that could not be read: {"file", "pages": "could not read 2 pages (3, 4): why"}
    unread: list[dict[str, str]]
    chunks: int
    embedded: int
    pages: int
    seconds: float
    parent: str | None
    reprocessed: str
    timings: dict[str, float]
    status: str


class OcrWord(msgspec.Struct):
    """One word OCR read on a page image: its box as fractions of the page (x0, y0, x1, y1 from the
    top-left, as the page is shown) and its confidence (0-100)."""

    text: str
    box: list[float]
    confidence: float


class PageText(msgspec.Struct):
    manual: str
    title: str | None
    page: int
    text: str
    has_text: bool
    # "ocr": `text` was read from the page image by Tesseract; its words with their boxes follow
    source: str = "text"
    ocr_confidence: float | None = None
    words: list[OcrWord] = []


# -- index versions ----------------------------------------------------------------------------
class VersionList(msgspec.Struct):
    active: str | None
    versions: list[dict[str, object]]


class Activated(msgspec.Struct):
    active: str | None


class RolledBack(msgspec.Struct):
    active: str
    previous: str | None


class GcDone(msgspec.Struct):
    """retrieval.versions.IndexStore.gc(): the versions removed (or, previewed, that would be)."""

    removed: list[str]
    kept: list[str]
    active: str | None
    bytes_freed: int
    manuals_removed: int
    dry_run: bool


class IndexDiff(msgspec.Struct):
    """retrieval.versions.IndexStore.diff()."""

    a: str
    b: str
    added: list[dict[str, object]]
    removed: list[dict[str, object]]
    changed: list[dict[str, object]]
    unchanged: list[str]
    chunks: dict[str, int | None]
    embedding_changed: bool
    chunker_changed: bool


class ImportedVersion(msgspec.Struct):
    """gateway.fleet.archive.import_archive(): the version landed inactive (or was already here)."""

    version: str
    status: Literal["imported", "already present"]
    active: bool
    signed_by: str
    created_at: str | None
    embedding: dict[str, object]
    manuals: int
    payload_bytes: int
    manuals_added: int


# -- system ------------------------------------------------------------------------------------
class Health(msgspec.Struct, omit_defaults=True):
    """`degraded`: the generation runtime failed (crashed repeatedly or cannot load) and answers are
    extractive until an admin reloads it; `warning` says why. With `ok`, `warning` may say that the
    active index is searched with the embedder it was built with, not the configured one, until an
    ingest re-embeds it. `runtime` is the runtime's life cycle state (unloaded, loading, ready,
    restarting, failed)."""

    status: Literal["ok", "loading", "degraded"]
    index_version: str | None
    warning: str | None = None
    runtime: str | None = None
    answer_mode: str | None = None  # the gateway's default: generate or extractive (the page says which)
    answer_mode_reason: str | None = None  # why: answer.mode, or gate 4's verdict under "auto"
    # Set when the model has not earned the green badge (gate 4 not passed, generate not pinned): a
    # question's own "generate" (the page's Explain) then comes back as evidence with a labelled draft.
    model_unqualified: str | None = None


class ProfileSwitch(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a reload did: `unchanged`, `switched` (gate 1 passed), `reloaded` (a failed runtime reset and
    loaded again) or `refused` (the old chain serves)."""

    status: str
    profile: str | None = None
    detail: str | None = None
    at: str | None = None
    chain_id: str | None = None
    gate1: dict[str, object] | None = None
    to: str | None = None
    from_: str | None = msgspec.field(default=None, name="from")


class Deployment(msgspec.Struct, kw_only=True, omit_defaults=True):
    """`profile` or `profile_error`; `chain_id` and `chain` only once the runtime is loaded."""

    index_version: str | None
    answer_mode: str
    ready: bool
    load_error: str | None
    answer_mode_configured: str | None = None  # answer.mode: auto (follow gate 4), generate or extractive
    answer_mode_reason: str | None = None
    qualification: dict[str, object] | None = None  # gate 4's last verdict for this profile
    model_unqualified: str | None = None  # as in Health: why the model's answers are drafts, never green
    profile: dict[str, object] | None = None
    profile_error: str | None = None
    # The runtime's one owner (gateway.runtime_owner): state, reason, backend, isolation, worker.
    runtime: dict[str, object] | None = None
    chain_id: str | None = None
    chain: dict[str, object] | None = None
    gates: dict[str, object] | None
    # The last profile switch of this server (gateway.web.profile_switch): status switched/refused.
    last_switch: dict[str, object] | None = None


class DoctorRunOut(msgspec.Struct):
    """POST /api/v1/deployment/doctor: the verdict `manualqa doctor` prints, as it was recorded."""

    checked_at: str
    profile: str
    passed: bool
    failed_gates: list[int]
    chain_id: str
    gates: list[dict[str, object]]
    # gateway.qualification.verdicts.DoctorReport.to_dict(): device, artifact, rollback set, owners
    report: dict[str, object]
    warning: str | None


class AnswerModeOut(msgspec.Struct):
    """The answer mode now in force on this running server (manualqa.toml is not changed)."""

    answer_mode: Literal["auto", "generate", "extractive"]
    previous: str
    persisted: bool
    note: str


# -- API keys ----------------------------------------------------------------------------------
class KeyOut(msgspec.Struct):
    """One row of gateway.records.keys.KeyStore.list(): never the key, only what it is and did."""

    name: str
    role: str
    created: str
    last_used: str | None
    revoked: str | None


class KeyList(msgspec.Struct):
    keys: list[KeyOut]


class KeyCreated(msgspec.Struct):
    """The new key itself, in this response only: gateway.db keeps its hash."""

    name: str
    role: str
    key: str
    note: str


class KeyRevoked(msgspec.Struct):
    """`own_key`: the caller made this request with the revoked key (its admin session has ended)."""

    name: str
    revoked: bool
    own_key: bool
    admin_keys_left: int
