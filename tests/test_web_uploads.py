"""Uploads are streamed to disk: hostile or huge multipart bodies never blow up the server.

POST /api/v1/manuals used to let Litestar read the whole body into memory before parsing it (a
190 MB upload peaked the server at 1.35 GB RSS) and a part with `filename=""` was a 500. These
tests run one real server (max_upload_mb = 250) and measure its peak RSS (VmHWM in
/proc/<pid>/status, reset through /proc/<pid>/clear_refs) around chunked uploads that have no
Content-Length, so nothing can be refused from the headers alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness import MIB, proc_mib
from tests.support.http import error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

CAP_MB = 250
CONFIG = f"[server]\nmax_upload_mb = {CAP_MB}\nrate_limit_per_minute = 600\n"
BOUNDARY = "mqa-upload-test-6f1c2a"
MULTIPART = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}
MB = 1024 * 1024
PEAK_GROWTH_LIMIT_MB = 100


@pytest.fixture(scope="module")
def server(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    srv = GatewayServer(sample_data_dir, tmp_path_factory.mktemp("web-uploads"), config=CONFIG,
                        profile=SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0))
    srv.start()
    srv.admin = srv.admin_key()
    srv.auth = {"Authorization": f"Bearer {srv.admin}"}
    yield srv
    srv.stop()


# -- helpers -----------------------------------------------------------------------------------

def part(name: str = "data", filename: str | None = "manual.pdf", body: bytes = b"") -> bytes:
    disposition = f'form-data; name="{name}"' + ("" if filename is None else f'; filename="{filename}"')
    return (f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
            f"Content-Type: application/pdf\r\n\r\n").encode() + body + b"\r\n"


def closing() -> bytes:
    return f"--{BOUNDARY}--\r\n".encode()


def padded_upload(size: int, sent: list[int], hold: threading.Event | None = None, name: str = "data",
                  filename: str | None = "padded.pdf", after: bytes = b"") -> Iterator[bytes]:
    """One part: a PDF header then zeros up to `size` bytes, 1 MB at a time (no Content-Length).

    `sent` counts the bytes handed to the client; `hold`, if given, is waited on after the first
    MB; `after` (more parts) goes between this part and the closing boundary.
    """
    head = part(name, filename)[:-2] + b"%PDF-1.4\n"
    sent[0] += len(head)
    yield head
    block = b"0" * MB
    remaining = size - 9
    while remaining > 0:
        chunk = block[:min(MB, remaining)]
        remaining -= len(chunk)
        sent[0] += len(chunk)
        yield chunk
        if hold is not None and sent[0] >= MB:
            assert hold.wait(60), "the test never released this upload"
            hold = None
    yield b"\r\n" + after + closing()


def measured(server: GatewayServer, body: Iterator[bytes]) -> tuple[httpx.Response, int, float]:
    """POST the streamed body; the response, the server's peak RSS growth (bytes) and the seconds."""
    idle = server_memory(server)["VmRSS"]
    reset_peak(server)
    before = server_memory(server)["VmHWM"]
    t0 = time.monotonic()
    r = post_upload(server, body)
    took = time.monotonic() - t0
    return r, server_memory(server)["VmHWM"] - max(before, idle), took


def server_memory(server: GatewayServer) -> dict[str, int]:
    """VmRSS and VmHWM of the serving process, in bytes."""
    return {k: round(v * MIB) for k, v in proc_mib(server.pid).items()}


def reset_peak(server: GatewayServer) -> None:
    """Make VmHWM start again from the current RSS (Linux: 5 > /proc/<pid>/clear_refs)."""
    assert server.proc is not None
    Path(f"/proc/{server.proc.pid}/clear_refs").write_text("5")



def active_version(server: GatewayServer) -> str:
    return httpx.get(server.url + "/api/v1/index/versions", headers=server.auth).json()["active"]


def spooled_files(server: GatewayServer) -> list[Path]:
    uploads = server.data / "uploads"
    return [p for p in uploads.rglob("*") if p.is_file()] if uploads.exists() else []


def post_upload(server: GatewayServer, content: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(server.url + "/api/v1/manuals", content=content, timeout=120,
                      headers={**server.auth, **MULTIPART, **(headers or {})})


# -- hostile forms: clear 4xx, never a 500 ------------------------------------------------------

def test_server_process_is_the_python_serving(server: GatewayServer) -> None:
    assert server.proc is not None
    cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert b"python" in Path(cmdline[0].decode()).name.encode() and b"serve" in cmdline, cmdline


def test_empty_filename_is_a_clear_400(server: GatewayServer) -> None:
    before = active_version(server)
    body = part(filename="", body=b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + bytes(range(256))) + closing()
    err = error_of(post_upload(server, body), 400)  # was a 500: the binary part decoded as text
    assert "file name" in err["message"].lower(), err
    assert server.alive() and active_version(server) == before
    assert "unhandled error" not in server.log_path.read_text(errors="replace")


@pytest.mark.parametrize(("body", "headers", "status", "words"), [
    (part(body=b"") + closing(), {}, 400, "empty"),
    (part(name="other", body=b"%PDF-1.4\n") + closing(), {}, 400, "no file in field data"),
    (part(filename=None, body=b"%PDF-1.4\n") + closing(), {}, 400, "not a file"),
    (part(body=b"%PDF-1.4\n" + b"0" * 1000), {}, 400, "ended"),  # no closing boundary
    (b"%PDF-1.4\n", {"content-type": "application/pdf"}, 415, "multipart"),
    (part(body=b"x") + closing(), {"content-type": "multipart/form-data"}, 400, "boundary"),
], ids=["empty-content", "no-data-field", "data-not-a-file", "truncated", "not-multipart", "no-boundary"])
def test_bad_forms_are_clear_errors(server: GatewayServer, body: bytes, headers: dict[str, str],
                                    status: int, words: str) -> None:
    before = active_version(server)
    err = error_of(post_upload(server, body, headers), status)
    assert words in err["message"].lower(), err
    assert server.alive() and active_version(server) == before
    assert spooled_files(server) == []


def test_other_fields_are_ignored(server: GatewayServer) -> None:
    body = part(name="note", filename=None, body=b"n" * 200_000) + part(body=b"not a pdf") + closing()
    assert "not a pdf" in error_of(post_upload(server, body), 415)["message"].lower()


# -- memory: streamed to disk, capped while streaming -------------------------------------------

@pytest.mark.timeout(120)
def test_large_chunked_upload_keeps_memory_flat(server: GatewayServer) -> None:
    before_version = active_version(server)
    sent = [0]
    r, growth, took = measured(server, padded_upload(190 * MB, sent))
    print(f"\n190 MB chunked file upload: {r.status_code} in {took:.1f} s; "
          f"peak RSS growth {growth / MB:.1f} MB")
    # a PDF header and zeros: refused once on disk (no %%EOF), after the whole body was spooled
    error_of(r, 415, 422)
    assert sent[0] >= 190 * MB
    assert growth < PEAK_GROWTH_LIMIT_MB * MB, f"peak RSS grew {growth / MB:.0f} MB"
    assert server.alive() and active_version(server) == before_version
    assert spooled_files(server) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "filename"), [("note", None), ("data", "")], ids=["text-field", "no-filename"])
def test_large_hostile_part_is_not_held_in_memory(server: GatewayServer, name: str, filename: str | None) -> None:
    """190 MB in a part without a file name: Litestar held it in memory, then decoded it as text."""
    sent = [0]
    after = part(body=b"%PDF-1.4 not really") if name != "data" else b""
    r, growth, took = measured(server, padded_upload(190 * MB, sent, name=name, filename=filename, after=after))
    print(f"\n190 MB part {name!r} without a file name: {r.status_code} after {sent[0] / MB:.0f} MB sent "
          f"in {took:.1f} s; peak RSS growth {growth / MB:.1f} MB")
    error_of(r, 400, 415, 422)
    assert growth < PEAK_GROWTH_LIMIT_MB * MB, f"peak RSS grew {growth / MB:.0f} MB"
    assert server.alive() and spooled_files(server) == []
    assert "unhandled error" not in server.log_path.read_text(errors="replace")


@pytest.mark.timeout(120)
def test_chunked_upload_over_the_cap_is_refused_while_streaming(server: GatewayServer) -> None:
    sent = [0]
    total = 600 * MB
    r, growth, took = measured(server, padded_upload(total, sent))
    print(f"\n{total // MB} MB chunked upload over a {CAP_MB} MB cap: {r.status_code} after "
          f"{sent[0] / MB:.0f} MB sent in {took:.1f} s; peak RSS growth {growth / MB:.1f} MB")
    err = error_of(r, 413)
    assert f"{CAP_MB} MB" in err["message"], err
    assert sent[0] < total, "the 413 should arrive before the client has sent everything"
    assert growth < PEAK_GROWTH_LIMIT_MB * MB, f"peak RSS grew {growth / MB:.0f} MB"
    assert server.alive()
    assert spooled_files(server) == []


# -- at most two uploads spool at once -----------------------------------------------------------

@pytest.mark.timeout(120)
def test_third_concurrent_upload_gets_503(server: GatewayServer) -> None:
    hold = threading.Event()
    sent = [[0], [0]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            slow = [pool.submit(post_upload, server, padded_upload(4 * MB, sent[i], hold)) for i in range(2)]
            deadline = time.monotonic() + 30
            while len(spooled_files(server)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(spooled_files(server)) == 2, "the two slow uploads never started spooling"
            for _ in range(2):
                r = post_upload(server, part(body=b"%PDF-1.4\n") + closing())
                err = error_of(r, 503)
                assert r.headers.get("retry-after", "").isdigit(), r.headers
                assert "upload" in err["message"].lower(), err
        finally:
            hold.set()
        for future in slow:
            error_of(future.result(timeout=60), 422)  # a PDF header and zeros: no %%EOF
    # the places are given back: the next upload is served again
    error_of(post_upload(server, part(body=b"not a pdf") + closing()), 415)
    assert spooled_files(server) == []
