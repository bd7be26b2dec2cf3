"""Switch the deployment profile of a running server, without a restart and without a gap.

`manualqa profile activate` (or `rollback`) moves the active-profile pointer; the server notices
within seconds (or at once on `POST /api/v1/deployment/reload`). The new chain must prove itself
first: it loads and passes gate 1 (artifact checksum, locked runtime versions, a smoke prompt)
beside the old one, which keeps answering meanwhile. Then the switch takes its turn in the
generation queue like a question: answers admitted before it finish on the old chain, and those
after it run on the new one; nothing ever generates on a half-switched gateway. A chain that fails
gate 1 is refused and the old one keeps serving; `/api/v1/deployment` says which happened.

Both chains are in memory for the length of gate 1 (a small model beside a small model); a board
without room for both should be switched with a restart (`systemctl restart manualqa`).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, TypedDict

from gateway.stamps import utcnow

if TYPE_CHECKING:
    from litestar.datastructures import State

    from gateway.services import Services
    from runtimes.profiles import Profile

log = logging.getLogger("manualqa.web")

POLL_S = 3.0  # how often the server looks at the active-profile pointer (a stat and a small read)

# What a switch (or a reload) did, as POST /api/v1/deployment/reload returns it (responses_admin.ProfileSwitch)
# and /api/v1/deployment repeats it (`last_switch`, keys in the order they were set).
SwitchRecord = TypedDict("SwitchRecord", {"from": str, "to": str, "at": str, "status": str, "detail": str,
                                          "profile": str, "gate1": dict[str, object], "chain_id": str}, total=False)


class ProfileSwitcher:
    """One switch at a time; remembers the last attempt for /api/v1/deployment."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.last: SwitchRecord | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._refused: str | None = None  # content hash of a chain that failed: not retried by the poll

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="manualqa-profile-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.check(poll=True)
            except Exception:  # noqa: BLE001 - the watcher must outlive a bad profile file
                log.exception("profile watch failed")

    @property
    def _gw(self) -> Services:
        services: Services = self.state.gw
        return services

    def _wanted(self) -> Profile:
        from gateway.records.active_profile import resolve_profile

        settings = self._gw.settings
        return resolve_profile(settings.data_dir, settings.runtime.profile)

    def check(self, poll: bool = False, reset_failed: bool = False) -> SwitchRecord:
        """Switch to the profile in force if it is not the one serving; returns what happened.

        reset_failed (an admin's reload): a runtime that failed (crashed repeatedly, or could not
        load) under an unchanged profile is reset and loaded again: the admin has acted."""
        with self._lock:
            gw = self._gw
            wanted = self._wanted()
            try:
                current = gw.profile
            except Exception:  # noqa: BLE001 - a broken profile in force: anything that passes gate 1 is better
                current = None
            if current is None:
                return self._switch(None, wanted)
            if wanted.content_hash == current.content_hash and str(wanted.path) == str(current.path):
                if reset_failed and gw.runtimes.reset():
                    return self._reload(current)
                return {"status": "unchanged", "profile": current.name}
            if poll and wanted.content_hash == self._refused:
                return self.last or {"status": "refused"}
            return self._switch(current, wanted)

    def _switch(self, current: Profile | None, wanted: Profile) -> SwitchRecord:
        from gateway.qualification.load_gate import gate_one

        gw = self._gw
        before = current.name if current is not None else "(no working profile)"
        record: SwitchRecord = {"from": before, "to": wanted.name, "at": utcnow()}
        if gw.answer_mode().mode != "generate" and gw.runtime_if_loaded() is None:
            gw.switch_profile(wanted, None)  # no model loaded here: the next use loads the new one
            return self._done({**record, "status": "switched", "detail": "no runtime loaded; profile replaced"})
        log.info("profile switch: %s -> %s, running gate 1 beside the serving chain", before, wanted.name)
        result, found = gate_one(wanted, keep_loaded=True)
        record["gate1"] = result.to_dict()
        if not result.passed or found.runtime is None:
            self._refused = wanted.content_hash
            return self._done({**record, "status": "refused",
                               "detail": f"{wanted.name} fails gate 1 ({result.detail}); {before} keeps serving"})
        with gw.queue.turn() as _turn:  # answers admitted before the switch finish first
            old = gw.switch_profile(wanted, found.runtime)
            record["chain_id"] = found.runtime.describe().chain_id
        if old is not None and old is not found.runtime:
            try:
                old.unload()
            except Exception as exc:  # noqa: BLE001 - the new chain serves whatever the old one does
                log.warning("unloading the previous runtime failed: %s", exc)
        self._refused = None
        self.state.load_error = None
        return self._done({**record, "status": "switched",
                           "detail": f"{wanted.name} passed gate 1 and serves; {before} unloaded"})

    def _reload(self, current: Profile) -> SwitchRecord:
        record: SwitchRecord = {"from": current.name, "to": current.name, "at": utcnow()}
        try:
            runtime = self._gw.runtime  # its owner loads it (in a fresh worker) or records why not
        except Exception as exc:  # noqa: BLE001 - reported; answers stay extractive
            return self._done({**record, "status": "refused",
                               "detail": f"the failed runtime was reset but does not load again: {exc}"})
        return self._done({**record, "status": "reloaded", "chain_id": runtime.describe().chain_id,
                           "detail": f"the failed runtime of {current.name} was reset and serves again"})

    def _done(self, record: SwitchRecord) -> SwitchRecord:
        self.last = record
        (log.info if record["status"] in ("switched", "reloaded") else log.error)("profile switch %s: %s",
                                                                     record["status"], record["detail"])
        return record
