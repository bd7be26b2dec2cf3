"""The app factory: one Litestar app serving the JSON API, the OpenAI surface and the pages."""

from __future__ import annotations

import logging
import threading
import time

from litestar import Litestar, Router
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig

from gateway import __version__
from gateway.config import Settings
from gateway.records.jobs import JobRunner
from gateway.records.retention import RetentionTask
from gateway.services import Services
from gateway.web.audit import audit_middleware
from gateway.web.drain import InFlight, finish_answers
from gateway.web.errors import EXCEPTION_HANDLERS, ErrorShapeJson
from gateway.web.limits import UPLOAD_FRAMING, body_limits_middleware
from gateway.web.metrics import Metrics, counting_middleware
from gateway.web.page_language import Catalogues
from gateway.web.profile_switch import ProfileSwitcher
from gateway.web.routes_admin import AdminController
from gateway.web.routes_answers import AnswersController
from gateway.web.routes_ask import AskController
from gateway.web.routes_audit import AuditController
from gateway.web.routes_fleet import FleetController
from gateway.web.routes_index import IndexController
from gateway.web.routes_keys import KeysController
from gateway.web.routes_manuals import ManualsController
from gateway.web.routes_openai import OpenAIController
from gateway.web.routes_pages import OfflineDocs, PagesController, static_router
from gateway.web.routes_retention import RetentionController
from gateway.web.routes_status import StatusController
from gateway.web.routes_system import SystemController
from gateway.web.routes_trial import TrialController
from gateway.web.routes_unanswered import UnansweredController, VectorsByModel
from gateway.web.schemas import require_json_body
from gateway.web.security import RateLimiter, allowed_hosts_middleware
from gateway.web.uploads import UploadGate

log = logging.getLogger("manualqa.web")
API_PREFIX = "/api/v1"


def provide_services(state: State) -> Services:
    """The composition root, so that handlers declare `services: Services` instead of reading app state."""
    services: Services = state.gw
    return services


def provide_settings(state: State) -> Settings:
    """The one Settings: the services' (the app is created with them)."""
    settings: Settings = state.gw.settings
    return settings


def provide_jobs(state: State) -> JobRunner:
    """The background job runner (ingest after an upload)."""
    jobs: JobRunner = state.gw.jobs
    return jobs


API_DEPENDENCIES = {"services": Provide(provide_services, sync_to_thread=False),
                    "settings": Provide(provide_settings, sync_to_thread=False),
                    "jobs": Provide(provide_jobs, sync_to_thread=False)}


def api_router() -> Router:
    """The JSON API: every controller's path is relative to /api/v1, written once here."""
    return Router(path=API_PREFIX, dependencies=API_DEPENDENCIES,
                  route_handlers=[AskController, ManualsController, IndexController, FleetController,
                                  AnswersController, SystemController, KeysController, AdminController,
                                  AuditController, RetentionController,
                                  UnansweredController, StatusController, TrialController])


def warm_up(state: State) -> None:
    """Load what the first question needs; the gateway stays up (extractive) if the model fails."""
    gw = state.gw
    t0 = time.perf_counter()
    try:
        # The embedding model before the index: onnxruntime's threads started after faiss (and its
        # OpenMP runtime) is loaded embed a question about 1.5x slower (bench/suite/startup.py's searches).
        gw.embedder.encode_query("warm up")
        active = gw.store.active_id()
        if active is not None:
            gw.store.open()
            # the model that searches the active version, when it is another one (built before a change)
            searcher = gw.embedder_for(active)
            if searcher is not gw.embedder:
                searcher.encode_query("warm up")
        if gw.answer_mode().mode == "generate":
            try:
                _ = gw.runtime
            except Exception:  # noqa: BLE001 - answered extractively until fixed; its owner and /health say why
                pass
    except Exception as exc:
        state.load_error = f"warm-up failed: {exc}"
        log.exception("warm-up failed")
    state.ready_s = round(time.perf_counter() - t0, 3)
    state.ready.set()


def create_app(settings: Settings, services: Services | None = None, warm: bool = True) -> Litestar:
    """The HTTP app over one composition root; its State holds only what the web needs beside it."""
    gw = services or Services(settings)
    if gw.settings is not settings:
        raise ValueError("create_app: the services were built with other settings (there is one Settings)")
    _ = gw.jobs  # the server claims the data directory's jobs now, failing what a crash left unfinished
    queue = gw.queue
    state = State({
        "gw": gw, "metrics": Metrics(lambda: queue.depth),
        "rate": RateLimiter(settings.server.rate_limit_per_minute),
        "ready": threading.Event(), "load_error": None, "ready_s": None, "in_flight": InFlight(),
        # this app's own, not another app's in the process: uploads received at once (gateway.web.uploads),
        # one doctor run at a time (routes_admin), questions' vectors (routes_unanswered), page strings
        "uploads": UploadGate(), "doctor_lock": threading.Lock(), "question_vectors": VectorsByModel(),
        "catalogues": Catalogues(),
    })

    state.profiles = ProfileSwitcher(state)
    # the answer log's retention: applied now and hourly (gateway.records.retention); an admin may change it
    state.retention = RetentionTask(lambda: gw.log, lambda: gw.settings.log.retention_days)
    state.configured_retention_days = settings.log.retention_days

    def start() -> None:
        state.profiles.start()  # `manualqa profile activate` reaches the running server (profile_switch)
        state.retention.start()
        if warm:
            threading.Thread(target=warm_up, args=(state,), name="manualqa-warmup", daemon=True).start()
        else:
            state.ready.set()

    async def stop() -> None:  # after uvicorn's drain (gateway.web.drain): no answer row is lost
        state.profiles.stop()
        state.retention.stop()
        await finish_answers(state.in_flight, gw, gw.jobs)

    app = Litestar(
        route_handlers=[api_router(), OpenAIController, PagesController, static_router],
        state=state,
        on_startup=[start],
        on_shutdown=[stop],
        middleware=[counting_middleware(state.metrics), allowed_hosts_middleware(settings.server.allowed_hosts),
                    audit_middleware(gw),  # every admin action, with its result (gateway.web.audit)
                    body_limits_middleware(settings.server.max_json_kb, settings.server.max_upload_mb)],
        exception_handlers=EXCEPTION_HANDLERS,
        before_request=require_json_body,  # a JSON route's body sent as a form or text: 415, not parsed
        # Litestar's own check, behind body_limits_middleware
        request_max_body_size=settings.server.max_upload_mb * 1024 * 1024 + UPLOAD_FRAMING,
        cors_config=CORSConfig(allow_origins=settings.server.cors_origins)
        if settings.server.cors_origins else None,
        openapi_config=OpenAPIConfig(title="manualqa", version=__version__, path="/api/v1/schema",
                                     render_plugins=[OfflineDocs(path="/"), ErrorShapeJson(
                                         streaming=("/api/v1/ask", "/v1/chat/completions"))],
                                     description="Offline answers from equipment manuals, with citations."),
        debug=False,
        logging_config=None,  # uvicorn logs requests; library INFO chatter (faiss, torch) stays quiet
    )
    return app
