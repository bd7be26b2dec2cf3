"""A real gateway server in a subprocess for HTTP and browser tests (test-only).

`built_index(tmp, embedder)` ingests the two sample manuals once; `GatewayServer` copies that
data directory (so each server has its own gateway.db), writes a manualqa.toml and an optional
profile, starts `python -m gateway.cli serve` on a free loopback port and waits for /health.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]

SCRIPTED_PROFILE = """
name = "scripted-test"
description = "test double: streams a fixed script (tests only)"
target_device = "test"
backend = "tests.support.scripted:ScriptedRuntime"
rollback = ""
[artifact]
path = "scripted"
sha256 = ""
[options]
script = "{script}"
token_delay_s = {delay}
context_length = 4096
[generation]
max_tokens = 64
temperature = 0.0
[owners]
conversion = "tests"
integration = "tests"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def built_index(target: Path, embedder: Any) -> Path:
    """Ingest the sample manuals into target (a data directory) with the given embedder."""
    from gateway.config import Settings
    from gateway.services import Services

    settings = Settings(data_dir=target)
    gw = Services(settings, embedder=embedder)  # reuse the session's loaded model
    report = gw.ingest([REPO_ROOT / "sample_manuals"])
    assert report.version, f"sample ingest built no version: {report}"
    return target


def generate_by_default(config: str) -> str:
    """A test server serves generate mode unless its config names a mode: most tests exercise the model's
    path (the scripted double), which answer.mode = "auto" keeps for a profile that passed gate 4."""
    if re.search(r"^\s*mode\s*=", config, re.M):
        return config
    if "[answer]\n" in config:
        return config.replace("[answer]\n", '[answer]\nmode = "generate"\n', 1)
    return config + '\n[answer]\nmode = "generate"\n'


class GatewayServer:
    def __init__(self, source_data: Path, workdir: Path, config: str = "", profile: str | None = None,
                 env: dict[str, str] | None = None, prefix: list[str] | None = None) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        if source_data is not None:
            shutil.copytree(source_data, self.data, ignore=shutil.ignore_patterns("gateway.db*"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = workdir / "manualqa.toml"
        text = config
        if profile is not None:
            prof = workdir / "profile.toml"
            prof.write_text(profile, encoding="utf-8")
            text = f'[runtime]\nprofile = "{prof}"\n' + text
        text = generate_by_default(text)
        cfg.write_text(text, encoding="utf-8")
        self.env = {**os.environ, "MANUALQA_DATA": str(self.data), "MANUALQA_CONFIG": str(cfg),
                    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
                    **(env or {})}
        self.prefix = prefix or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "server.log"

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `manualqa ARGS` against this server's data directory and config."""
        return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=REPO_ROOT, env=self.env,
                              capture_output=True, text=True, check=check, timeout=300)

    def admin_key(self, name: str = "admin") -> str:
        return self.cli("keys", "create", name, "--role", "admin").stdout.strip()

    def start(self, timeout_s: float = 180.0) -> GatewayServer:
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning"],
            cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/api/v1/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"server not ready in {timeout_s} s:\n{self.log_path.read_text()[-3000:]}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
