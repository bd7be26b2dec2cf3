"""A real gateway server in a subprocess for HTTP and browser tests (test-only).

`built_index(tmp, embedder)` ingests the two sample manuals once; `GatewayServer` copies that
data directory (so each server has its own gateway.db), writes a manualqa.toml and an optional
profile; starting it (`python -m gateway serve` on a free loopback port, ready at the first 200 from
/api/v1/health) and stopping it is the bench harness's `Server` (bench/harness.py), which the
benchmarks start their servers with too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import REPO, Server, tree_env

REPO_ROOT = REPO

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


class GatewayServer(Server):
    def __init__(self, source_data: Path, workdir: Path, config: str = "", profile: str | None = None,
                 env: dict[str, str] | None = None, prefix: list[str] | None = None) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        if source_data is not None:
            shutil.copytree(source_data, self.data, ignore=shutil.ignore_patterns("gateway.db*"))
        cfg = workdir / "manualqa.toml"
        text = config
        if profile is not None:
            prof = workdir / "profile.toml"
            prof.write_text(profile, encoding="utf-8")
            text = f'[runtime]\nprofile = "{prof}"\n' + text
        text = generate_by_default(text)
        cfg.write_text(text, encoding="utf-8")
        self.log_path = workdir / "server.log"
        super().__init__(tree_env(self.data, cfg, extra=env), log=self.log_path, prefix=prefix)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `manualqa ARGS` against this server's data directory and config."""
        return subprocess.run([sys.executable, "-m", "gateway", *args], cwd=REPO_ROOT, env=self.env,
                              capture_output=True, text=True, check=check, timeout=300)

    def admin_key(self, name: str = "admin") -> str:
        return self.cli("keys", "create", name, "--role", "admin").stdout.strip()

    def start(self, timeout_s: float = 180.0, poll_s: float = 0.3) -> GatewayServer:
        super().start(timeout_s, poll_s)
        return self
