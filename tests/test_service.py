"""Running as a service (issue 12): the systemd unit `manualqa install-service` renders and writes,
and the graceful stop it relies on: SIGTERM during answers loses no log row.

The unit tests are fast and run the command in-process (always with --print or --unit-dir: this
machine may be root, and the default target of root is /etc/systemd/system). The stop tests start
a real `manualqa serve` with a slow scripted runtime, send it SIGTERM while three answers stream,
and read gateway.db directly afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from gateway.cli import main
from gateway.cli import service as service_cli
from gateway.cli.service import EXAMPLE_COMMAND, UnitOptions, render_unit
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

REPO = Path(__file__).resolve().parents[1]
THIS_VENV_COMMAND = str(Path(sys.executable).parent.absolute() / "manualqa")
HARDENING = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
             "Restart": "on-failure", "KillSignal": "SIGTERM", "KillMode": "mixed", "User": "manualqa",
             "Group": "manualqa", "StateDirectory": "manualqa", "CapabilityBoundingSet": "",
             "ProtectKernelTunables": "yes", "ProtectControlGroups": "yes", "RestrictSUIDSGID": "yes"}


def directives(unit: str) -> dict[str, list[str]]:
    """KEY -> values of a unit file (comments and section headers left out)."""
    out: dict[str, list[str]] = {}
    for line in unit.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def unexplained(unit: str) -> list[str]:
    """Directives that no comment explains: each run of directive lines must follow a comment."""
    bad, explained = [], False
    for line in unit.splitlines():
        if line.startswith("#"):
            explained = True
        elif not line or line.startswith("["):
            explained = False
        elif not explained:
            bad.append(line)
    return bad


def verify_with_systemd(unit: str, tmp: Path) -> None:
    """`systemd-analyze verify` finds nothing to say about the unit, where that tool exists."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        warnings.warn("systemd-analyze is not installed here: the unit was not verified by systemd", stacklevel=2)
        return
    path = tmp / "manualqa.service"
    path.write_text(unit, encoding="utf-8")
    done = subprocess.run([tool, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60)
    about_unit = [line for line in (done.stdout + done.stderr).splitlines() if "manualqa.service" in line]
    assert done.returncode == 0 and not about_unit, done.stdout + done.stderr


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["install-service", *args], catch_exceptions=False)


# -- (a) the unit ------------------------------------------------------------------------------

def test_unit_renders_hardened_for_this_venv(tmp_path: Path) -> None:
    unit = render_unit(UnitOptions(command=THIS_VENV_COMMAND))
    d = directives(unit)
    for key, value in HARDENING.items():
        assert d.get(key) == [value], (key, d.get(key))
    assert d["ExecStart"] == [f"{THIS_VENV_COMMAND} serve --host 0.0.0.0 --port 8080"]
    assert Path(d["ExecStart"][0].split()[0]).is_absolute()
    assert {"MANUALQA_DATA=/var/lib/manualqa", "HF_HUB_OFFLINE=1",
            "MANUALQA_SERVER__DRAIN_TIMEOUT_S=60"} <= set(d["Environment"])
    assert d["MemoryMax"] == ["2G"] and d["PrivateDevices"] == ["yes"] and "DeviceAllow" not in d
    assert d["RestartSec"] == ["5s"]
    assert int(d["TimeoutStopSec"][0]) >= 60 + 30  # the drain, and time for cancelled answers to log
    assert "DynamicUser" not in d
    assert not unexplained(unit), f"directives without a comment saying why: {unexplained(unit)}"
    verify_with_systemd(unit, tmp_path)


def test_unit_allows_devices_memory_and_low_ports(tmp_path: Path) -> None:
    unit = render_unit(UnitOptions(command=THIS_VENV_COMMAND, devices=("/dev/dri/renderD129", "char-drm"),
                                   groups=("render",), memory_max="6G", port=80, drain_timeout_s=120))
    d = directives(unit)
    assert d["PrivateDevices"] == ["no"] and d["DevicePolicy"] == ["closed"]
    assert d["DeviceAllow"] == ["/dev/dri/renderD129 rw", "char-drm rw"]
    assert d["SupplementaryGroups"] == ["render"]
    assert d["MemoryMax"] == ["6G"] and d["TimeoutStopSec"] == ["150"]
    assert d["AmbientCapabilities"] == d["CapabilityBoundingSet"] == ["CAP_NET_BIND_SERVICE"]
    assert d["ExecStart"] == [f"{THIS_VENV_COMMAND} serve --host 0.0.0.0 --port 80"]
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp"):
        assert d[key] == [HARDENING[key]]
    assert not unexplained(unit)
    verify_with_systemd(unit, tmp_path)


def test_the_unit_has_one_source_and_every_placeholder_is_filled() -> None:
    """The unit's text is the package's template (no second copy under deploy/); rendered for /opt it
    leaves no $placeholder behind (the tests above have systemd verify renderings for this venv)."""
    assert not (REPO / "deploy" / "manualqa.service").exists()
    unit = render_unit(UnitOptions(command=EXAMPLE_COMMAND))
    assert "$" not in unit and "ExecStart=/opt/manualqa/bin/manualqa serve --host 0.0.0.0 --port 8080" in unit
    assert not unexplained(unit)


# -- (b) the command ---------------------------------------------------------------------------

@pytest.fixture()
def tmp_is_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's fake venv lives under /tmp, which PrivateTmp= would hide from a real service."""
    monkeypatch.setattr(service_cli, "HIDDEN", {k: v for k, v in service_cli.HIDDEN.items() if "tmp" not in k})


def fake_venv(tmp: Path) -> str:
    exe = tmp / "venv" / "bin" / "manualqa"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n", encoding="utf-8")
    exe.chmod(0o755)
    return str(exe)


def test_install_service_writes_the_unit_and_prints_next_steps(tmp_path: Path, tmp_is_visible: None) -> None:
    exe = fake_venv(tmp_path)
    units = tmp_path / "units"
    r = run_cli("--unit-dir", str(units), "--executable", exe, "--user", "mqa-test-nouser",
                "--data-dir", "/srv/manualqa", "--memory-max", "3G", "--port", "9000")
    assert r.exit_code == 0, r.output
    written = (units / "manualqa.service").read_text(encoding="utf-8")
    d = directives(written)
    assert d["ExecStart"] == [f"{exe} serve --host 0.0.0.0 --port 9000"] and d["MemoryMax"] == ["3G"]
    assert d["ReadWritePaths"] == ["/srv/manualqa"] and "StateDirectory" not in d
    assert d["User"] == ["mqa-test-nouser"]
    assert f"wrote {units / 'manualqa.service'}" in r.output
    for step in ("useradd --system --user-group --home-dir /srv/manualqa", "install -d -o mqa-test-nouser",
                 "systemctl daemon-reload", "systemctl enable --now manualqa", "journalctl -u manualqa"):
        assert step in r.output, (step, r.output)

    r = run_cli("--unit-dir", str(units), "--executable", exe, "--json", "--device", "/dev/null")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["path"] == str(units / "manualqa.service") and "DeviceAllow=/dev/null rw" in out["unit"]
    assert "systemctl daemon-reload" in out["next"]

    printed = tmp_path / "printed"
    r = run_cli("--print", "--unit-dir", str(printed), "--executable", exe)
    assert r.exit_code == 0 and "ProtectSystem=strict" in r.output and not printed.exists()


def test_install_service_for_this_venv() -> None:
    """This venv's own command: rendered, or refused when its python is where the sandbox cannot see."""
    r = run_cli("--print")
    hidden = service_cli.hidden_paths(service_cli.interpreter_chain(service_cli.this_command()))
    if hidden:  # e.g. a pyenv python under /root: a system user could not run it even without ProtectHome
        assert r.exit_code == 1, r.output
        assert "the service could not run" in r.output and "hides" in r.output and "/opt/manualqa" in r.output
    else:
        assert r.exit_code == 0, r.output
        assert f"ExecStart={service_cli.this_command()} serve" in r.output


@pytest.mark.parametrize(("args", "message"), [
    (["--data-dir", "/home/tech/data"], "/home/tech/data (under /home, which ProtectHome=yes hides)"),
    (["--data-dir", "/tmp/data"], "/tmp/data (under /tmp, which PrivateTmp=yes hides)"),
    (["--data-dir", "data"], "the data directory must be an absolute path"),
    (["--service-config", "manualqa.toml"], "the config file must be an absolute path"),
    (["--user", "root"], "not as root"),
    (["--memory-max", "lots"], "--memory-max 'lots'"),
    (["--device", "/dev"], "--device '/dev': a device node"),
    (["--device", "rknpu"], "--device 'rknpu'"),
])
def test_install_service_refuses(tmp_path: Path, args: list[str], message: str) -> None:
    r = run_cli("--unit-dir", str(tmp_path / "units"), "--executable", EXAMPLE_COMMAND, *args)
    assert r.exit_code != 0, r.output
    assert "Error:" in r.output and message in r.output, r.output
    assert not (tmp_path / "units").exists()


def test_install_service_refuses_a_venv_under_home(tmp_path: Path) -> None:
    r = run_cli("--unit-dir", str(tmp_path / "units"), "--executable", "/home/tech/venv/bin/manualqa")
    assert r.exit_code == 1
    assert "could not run /home/tech/venv/bin/manualqa" in r.output and "ProtectHome=yes" in r.output


# -- (c) SIGTERM during answers ----------------------------------------------------------------

def test_finish_answers_cancels_waits_and_closes() -> None:
    """The shutdown hook (the backstop after uvicorn cut requests): cancel, wait for the rows, close."""
    import asyncio

    from gateway.web.drain import InFlight, finish_answers

    in_flight, closed, logged_rows = InFlight(), [], []
    cancel, running = threading.Event(), threading.Event()

    def answer() -> None:  # stands in for a pipeline: stops at the cancel, logs, then leaves
        with in_flight.track(cancel):
            running.set()
            cancel.wait(30)
            time.sleep(0.2)
            logged_rows.append("cancelled")

    class Closable:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append((self.name, list(logged_rows)))

    worker = threading.Thread(target=answer, daemon=True)
    worker.start()
    assert running.wait(60) and len(in_flight) == 1
    asyncio.run(finish_answers(in_flight, Closable("log"), Closable("jobs")))
    assert cancel.is_set() and len(in_flight) == 0
    assert closed == [("log", ["cancelled"]), ("jobs", ["cancelled"])]  # closed only after the row
    assert asyncio.run(in_flight.wait(0.1))


SLOW_SCRIPT = " ".join(["The piston board accepts 6 V to 36 V input [1]."] * 3)  # 30 pieces
QUESTION = "What input voltage range does the piston board accept?"


class StreamingAsk(threading.Thread):
    """One streaming ask: records its events, its answer id (from the retrieval event) and any error."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.answer_id: str | None = None
        self.started = threading.Event()  # the answer runs on the server (its id is known)
        self.error: str | None = None

    def run(self) -> None:
        try:
            with httpx.stream("POST", self.url + "/api/v1/ask", json={"question": QUESTION, "stream": True},
                              timeout=120) as r:
                assert r.status_code == 200, r.status_code
                buf = ""
                for text in r.iter_text():
                    buf += text
                    *blocks, buf = re.split(r"\r?\n\r?\n", buf)
                    for block in blocks:
                        self._event(block)
        except (httpx.HTTPError, AssertionError) as exc:
            self.error = repr(exc)
        finally:
            self.started.set()

    def _event(self, block: str) -> None:
        kind, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if not data:
            return
        payload = json.loads("\n".join(data))
        self.events.append((kind, payload))
        if kind == "retrieval":
            self.answer_id = payload["id"]
            self.started.set()

    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]


def logged(data: Path) -> dict[str, str]:
    with sqlite3.connect(data / "gateway.db") as db:
        return dict(db.execute("SELECT id, outcome FROM answers").fetchall())


def stop_during_answers(srv: GatewayServer) -> tuple[list[StreamingAsk], float, int]:
    """Three streaming asks, SIGTERM once each runs and one streams tokens; (asks, seconds to exit, status)."""
    asks = [StreamingAsk(srv.url) for _ in range(3)]
    for a in asks:
        a.start()
    for a in asks:
        assert a.started.wait(120) and a.answer_id, a.error
    # One generation runs at a time (the generation slot): the first streams tokens, the others wait
    # for the slot, in flight all the same.
    deadline = time.monotonic() + 60
    while not any("token" in a.kinds() for a in asks):
        assert time.monotonic() < deadline, [a.kinds() for a in asks]
        time.sleep(0.05)
    assert srv.proc is not None
    t0 = time.monotonic()
    os.kill(srv.proc.pid, signal.SIGTERM)  # the main process alone, as KillMode=mixed does
    # once it says it stops (a fixed 0.5 s was not always enough for a busy box to get there) ...
    deadline = time.monotonic() + 60
    while "stopping: no new connections" not in srv.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline and srv.proc.poll() is None, srv.log_path.read_text()[-2000:]
        time.sleep(0.05)
    try:  # ... a new connection is refused (the listening socket is closed), never left hanging
        r = httpx.get(srv.url + "/api/v1/health", timeout=5)
        assert r.status_code == 503, r.status_code
    except httpx.ConnectError:
        pass
    status = srv.proc.wait(timeout=120)
    took = time.monotonic() - t0
    for a in asks:
        a.join(30)
    return asks, took, status


def test_sigterm_drains_running_answers_and_loses_no_row(sample_data_dir: Path, tmp_path: Path) -> None:
    srv = GatewayServer(sample_data_dir, tmp_path, profile=SCRIPTED_PROFILE.format(script=SLOW_SCRIPT, delay=0.1))
    srv.start()
    try:
        asks, took, status = stop_during_answers(srv)
    finally:
        srv.stop()
    log = srv.log_path.read_text(errors="replace")
    assert status == 0, log[-3000:]
    assert took < 60, f"the drain took {took:.1f} s, beyond drain_timeout_s"
    assert "draining 3 answer(s)" in log and "answer log closed" in log, log[-3000:]
    assert "Traceback" not in log and "cancelling" not in log, log[-3000:]
    for a in asks:
        assert a.error is None and a.kinds()[-1] == "final", (a.error, a.kinds())
        assert a.events[-1][1]["id"] == a.answer_id
        assert sum(k == "token" for k in a.kinds()) >= 10  # the whole answer streamed, not a stub
    rows = logged(srv.data)
    assert set(rows) == {a.answer_id for a in asks} and len(rows) == 3
    assert "cancelled" not in rows.values(), rows


def test_answers_past_the_drain_timeout_end_cancelled_and_logged(sample_data_dir: Path, tmp_path: Path) -> None:
    srv = GatewayServer(sample_data_dir, tmp_path, config="[server]\ndrain_timeout_s = 1.0\n",
                        profile=SCRIPTED_PROFILE.format(script=SLOW_SCRIPT, delay=0.2))
    srv.start()
    try:
        asks, took, status = stop_during_answers(srv)
    finally:
        srv.stop()
    log = srv.log_path.read_text(errors="replace")
    assert status == 0, log[-3000:]
    # drain 1 s, then the cancels; 30 s bounds a hang (that the answers were cut, not finished, the rows say)
    assert took < 1.0 + 30, f"stopped {took:.1f} s after SIGTERM (drain 1 s, then the cancels)"
    assert "draining 3 answer(s) for up to 1 s" in log and "cancelling 3 answer(s)" in log, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    for a in asks:  # cut mid-answer, and told so: the final event says cancelled
        assert a.error is None and a.kinds()[-1] == "final", (a.error, a.kinds())
        assert a.events[-1][1]["id"] == a.answer_id and a.events[-1][1]["outcome"] == "cancelled"
    rows = logged(srv.data)
    assert rows == {a.answer_id: "cancelled" for a in asks}, rows
