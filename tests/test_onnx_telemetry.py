"""onnxruntime queues no telemetry on the gateway's disk (retrieval/__init__.py says why).

A child process with a fresh HOME and no ORT_DISABLE_TELEMETRY of its own loads the built-in embedder
through the product path and embeds a query, as a search does; onnxruntime 1.32 alone leaves a device id
and an events database under ~/.cache/Microsoft there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = ("from retrieval.embedders.factory import load_embedder; "
        "e = load_embedder(); assert len(e.encode_query('input voltage of the piston board')) > 0")


def _run(home: Path, extra: dict[str, str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), **extra})
    proc = subprocess.run([sys.executable, "-c", CODE], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)  # only bounds a hang
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_embedder_leaves_no_telemetry_queue_nor_device_id(tmp_path: Path) -> None:
    _run(tmp_path, {})
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()] == []


def test_an_operators_explicit_setting_is_kept(tmp_path: Path) -> None:
    """The default is off; an operator who sets ORT_DISABLE_TELEMETRY=0 decides otherwise (and this shows
    the test above can fail: onnxruntime then writes its queue)."""
    _run(tmp_path, {"ORT_DISABLE_TELEMETRY": "0"})
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert "onnxruntime.db" in written or "deviceid" in written, written
