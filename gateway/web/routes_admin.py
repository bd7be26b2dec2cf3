"""What once needed a shell on the gateway, for admins over HTTP (issue 10): log export, doctor, answer mode.

Each calls the library function the CLI calls: `manualqa log export` -> gateway.records.log_export,
`manualqa doctor` -> gateway.qualification.doctor.run_and_record (on the profile in force, saved
where /api/v1/deployment reads it). The answer mode has no CLI: it is this running server's switch
(Services.mode_switch), over the configured mode (manualqa.toml and Settings are left alone; the
configuration decides again at the next start).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Literal

from litestar import Controller, get, post
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse, OpenAPIType, Operation, Schema
from litestar.params import FromQuery, JSONBody, QueryParameter
from litestar.response import Stream

from gateway.qualification.doctor import DoctorRun, run_and_record
from gateway.records.active_profile import resolve_profile
from gateway.records.log_export import MEDIA_TYPES, export_chunks, export_file_name
from gateway.services import Services
from gateway.stamps import utcnow
from gateway.web.errors import ApiError
from gateway.web.responses_admin import AnswerModeOut, DoctorRunOut
from gateway.web.routes_answers import OUTCOMES_PATTERN
from gateway.web.schemas import AnswerModeRequest
from gateway.web.security import admin_guard

log = logging.getLogger("manualqa.web")
MODE_NOTE = ("changed on this running server only: the configuration ([answer] mode in manualqa.toml) "
             "is unchanged and decides again at the next start")


@dataclass
class LogExportOperation(Operation):
    """The export streams a file: its 200 says which kinds (Litestar would document an empty schema)."""

    def __post_init__(self) -> None:
        ok = (self.responses or {}).get("200")
        if isinstance(ok, OpenAPIResponse):
            ok.description = "The answer log as a file (Content-Disposition: attachment), oldest answer first"
            ok.content = {MEDIA_TYPES["jsonl"].split(";")[0]: OpenAPIMediaType(schema=Schema(
                              type=OpenAPIType.STRING, description="one answer per line, as JSON")),
                          MEDIA_TYPES["csv"].split(";")[0]: OpenAPIMediaType(schema=Schema(
                              type=OpenAPIType.STRING, description="a header row, then one answer per row"))}


def _encoded(chunks: Iterator[tuple[str, int]]) -> Iterator[bytes]:
    for text, _ in chunks:
        yield text.encode("utf-8")


def set_answer_mode(state: State, mode: str) -> str:
    """Put `mode` in force for the next answers; returns the mode it replaces.

    The services' mode switch holds it (Settings.answer.mode stays what the configuration said): an
    answer in progress keeps the mode it started with. Switching to generate starts loading the model
    now, not on the next ask.
    """
    gw = state.gw
    previous: str = gw.mode_switch.set(mode, gw.settings.answer.mode)
    if gw.answer_mode().mode == "generate" and gw.runtime_if_loaded() is None:
        gw.runtimes.load_in_background()  # its owner records a failure; /health says why
    return previous


def doctor_in_force(services: Services, lock: threading.Lock) -> DoctorRun:
    """`manualqa doctor` on the profile in force. `lock`: the app's (its state's `doctor_lock`), one run at
    a time, as each loads the model beside the serving one; held by the thread doing the work, so a
    client that goes away mid-run does not let a second run start beside it."""
    if not lock.acquire(blocking=False):
        raise ApiError(409, "conflict", "a doctor run is already in progress; wait for its verdict")
    settings = services.settings
    try:
        return run_and_record(settings.data_dir, resolve_profile(settings.data_dir, settings.runtime.profile),
                              settings.embedding.model, services.retrieval_facts())
    finally:
        lock.release()


class AdminController(Controller):
    guards = [admin_guard]

    @get("/answers/export", tags=["answers"], operation_class=LogExportOperation,
         summary="Download the answer log (JSON lines or CSV), as `manualqa log export`")
    async def export_log(
        self, services: NamedDependency[Services],
        format: FromQuery[Literal["jsonl", "csv"]] = "jsonl",
        since: Annotated[str | None, QueryParameter(max_length=64)] = None,
        outcome: Annotated[str | None, QueryParameter(pattern=OUTCOMES_PATTERN)] = None,
        until: Annotated[str | None, QueryParameter(max_length=64)] = None,
        client: Annotated[str | None, QueryParameter(max_length=200)] = None,
        manual: Annotated[str | None, QueryParameter(max_length=64)] = None) -> Stream:
        """Oldest answer first; the filters are GET /api/v1/answers's (`since`: an ISO date/time or an age
        like 30m, 12h, 7d), so the file holds the answers the admin page lists."""
        answers = services.log
        chunks = await sync_to_thread(lambda: export_chunks(answers, format, since=since, outcome=outcome,
                                                            client=client, until=until, manual=manual))
        name = export_file_name(format, since, outcome, utcnow())
        return Stream(_encoded(chunks), media_type=MEDIA_TYPES[format],
                      headers={"Content-Disposition": f'attachment; filename="{name}"',
                               "Cache-Control": "no-store"})

    @post("/deployment/doctor", tags=["system"], status_code=200,
          summary="Run the three gates on the profile in force and record the verdict, as `manualqa doctor`")
    async def doctor(self, state: State, services: NamedDependency[Services]) -> DoctorRunOut:
        """Loads the model beside the serving one (tens of seconds); 409 while another run is going on."""
        run = await sync_to_thread(doctor_in_force, services, state.doctor_lock)
        verdict = run.report
        return DoctorRunOut(checked_at=run.checked_at, profile=str(verdict.profile["name"]), passed=verdict.passed,
                            failed_gates=verdict.failed_gates(), chain_id=verdict.chain_id,
                            gates=[g.to_dict() for g in verdict.gates], report=verdict.to_dict(), warning=run.warning)

    @post("/deployment/answer-mode", tags=["system"], status_code=200,
          summary="Switch this running server between generate and extractive (manualqa.toml is unchanged)")
    async def answer_mode(self, state: State, data: JSONBody[AnswerModeRequest]) -> AnswerModeOut:
        """From the next question on; an answer in progress finishes in the mode it started in."""
        previous = set_answer_mode(state, data.mode)
        log.info("answer mode: %s -> %s (%s)", previous, data.mode, MODE_NOTE)
        return AnswerModeOut(answer_mode=data.mode, previous=previous, persisted=False, note=MODE_NOTE)
