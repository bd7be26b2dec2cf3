"""onnxruntime queues no telemetry on the gateway's disk (retrieval/__init__.py says why).

A child process with a fresh HOME and no ORT_DISABLE_TELEMETRY of its own loads the built-in embedder
through the product path and embeds a query, as a search does; onnxruntime 1.32 alone leaves a device id
and an events database under ~/.cache/Microsoft there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CODE = ("import os; from retrieval.embedders.factory import load_embedder; "
        "e = load_embedder(); assert len(e.encode_query('input voltage of the piston board')) > 0; "
        "print(os.environ.get('ORT_DISABLE_TELEMETRY'))")
# onnxruntime 1.32 writes nothing where it believes it runs under CI (it reads these, among others; CI=true
# is what this project's own CI sets): the control below removes them so that it shows what a gateway sees.
CI_MARKERS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "CIRCLECI", "BUILDKITE", "CODEBUILD_BUILD_ID",
              "BITBUCKET_BUILD_NUMBER", "TF_BUILD")


def _run(home: Path, extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY" and k not in CI_MARKERS}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), **extra})
    proc = subprocess.run([sys.executable, "-c", CODE], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)  # only bounds a hang
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_the_embedder_leaves_no_telemetry_queue_nor_device_id(tmp_path: Path) -> None:
    assert _run(tmp_path, {}) == "1"
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_operators_explicit_setting_is_kept(tmp_path: Path) -> None:
    """The default is off; an operator who sets ORT_DISABLE_TELEMETRY=0 decides otherwise (and this shows
    the test above can fail: onnxruntime then writes its queue)."""
    assert _run(tmp_path, {"ORT_DISABLE_TELEMETRY": "0"}) == "0"
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    if not written:  # a container or CI marker onnxruntime reads that the list above does not name
        pytest.skip("onnxruntime 1.32 writes no telemetry in this environment even when allowed, so this control "
                    "cannot show the test above able to fail here (the setting itself was kept: asserted above)")
    assert "onnxruntime.db" in written or "deviceid" in written, written
