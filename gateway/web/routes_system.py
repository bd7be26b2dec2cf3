"""Health (503 "loading" until ready), Prometheus metrics, the deployment record and its reload."""

from __future__ import annotations

from typing import Any, Literal

from litestar import Controller, MediaType, Response, get, post
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec

from gateway.services import Services
from gateway.web.responses_admin import Deployment, Health, ProfileSwitch
from gateway.web.security import admin_guard, reader_guard


class SystemController(Controller):
    tags = ["system"]

    @get("/health", summary="200 when the index and runtime are ready, 503 while loading",
         responses={503: ResponseSpec(Health, description='Still loading: {"status": "loading"}')})
    async def health(self, state: State, services: NamedDependency[Services]) -> Response[Health]:
        ready = state.ready.is_set()  # read once: the status and the code must agree
        rt = services.runtimes.status()
        decision = services.answer_mode()
        failed = rt.state == "failed" and decision.mode == "generate"
        status: Literal["ok", "loading", "degraded"] = "loading" if not ready else "degraded" if failed else "ok"
        # in a thread: after a rollback to a version of another embedder, the first call loads that model
        note = await sync_to_thread(services.embedder_note) if ready and services.store.active_id() else None
        # failed or restarting while answers are extractive by default: still "ok" (no answer waits on the
        # model), but the warning says so, since a question asking for generate gets the evidence instead
        runtime_note = (f"the generation runtime is {rt.state}" + (f": {rt.reason}" if rt.reason else "")
                        if rt.state in ("failed", "restarting") else None)
        body = Health(status=status, index_version=services.store.active_id(),
                      warning=state.load_error or (rt.reason if failed else None) or runtime_note or note,
                      runtime=rt.state,
                      answer_mode=decision.mode, answer_mode_reason=decision.reason,
                      model_unqualified=decision.unqualified)
        if not ready:
            return Response(body, status_code=503, headers={"Retry-After": "5"})
        return Response(body, status_code=200)

    @get("/metrics", media_type=MediaType.TEXT, summary="Prometheus text exposition")
    async def metrics(self, state: State) -> str:
        text: str = state.metrics.render()
        return text

    @get("/deployment", guards=[reader_guard],
         summary="Active profile, artifact chain, index version, last gate results")
    async def deployment(self, state: State) -> Deployment:
        return Deployment(**await sync_to_thread(deployment_record, state))

    @post("/deployment/reload", guards=[admin_guard], status_code=200,
          summary="Switch to the active profile now (gate 1 first; the old chain serves if it fails)")
    async def reload(self, state: State) -> ProfileSwitch:
        record = await sync_to_thread(state.profiles.check, reset_failed=True)
        return ProfileSwitch(**{("from_" if k == "from" else k): v for k, v in record.items()})


def deployment_record(state: Any) -> dict[str, Any]:
    gw = state.gw
    decision = gw.answer_mode()
    record: dict[str, Any] = {"index_version": gw.store.active_id(), "answer_mode": decision.mode,
                              "answer_mode_configured": decision.configured, "answer_mode_reason": decision.reason,
                              "qualification": decision.qualification, "model_unqualified": decision.unqualified,
                              "ready": state.ready.is_set(), "load_error": state.load_error,
                              "runtime": gw.runtimes.status().to_dict()}
    try:
        profile = gw.profile
        record["profile"] = profile.to_dict()
    except Exception as exc:  # a broken profile is reported, not fatal
        record["profile_error"] = str(exc)
    runtime = gw.runtime_if_loaded()  # only if already loaded: never load from here
    if runtime is not None:
        chain = runtime.describe()
        record["chain_id"] = chain.chain_id
        record["chain"] = chain.to_dict()
    from gateway.records.deployments import last_doctor_report

    name = (record.get("profile") or {}).get("name")
    last = last_doctor_report(gw.settings.data_dir, name) if name else None
    switcher = getattr(state, "profiles", None)
    record["last_switch"] = switcher.last if switcher is not None else None
    record["gates"] = None if last is None else {
        "checked_at": last["checked_at"], "passed": last["report"].get("passed"),
        "chain_id": last["report"].get("chain_id"), "gates": last["report"].get("gates"),
        "note": "from the last `manualqa doctor` run for this profile"}
    return record
