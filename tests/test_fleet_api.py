"""Signed index archives through the admin API (issue 12): export a version from gateway A over HTTP,
import it into gateway B over HTTP. Two real servers.

B trusts A's public key. A good archive lands on B inactive, B's active version unchanged; a bad one
(tampered, truncated, signed by an untrusted key, path traversal, not an archive) is a 4xx in the one
JSON error shape and leaves B's index, manuals and spool directory exactly as they were.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.fleet.archive import MANIFEST_NAME, SIGNATURE_NAME
from gateway.fleet.signing import create_key, private_key
from tests.support.http import bearer, error_of
from tests.support.server import SCRIPTED_PROFILE, GatewayServer

pytestmark = pytest.mark.slow

PROFILE = SCRIPTED_PROFILE.format(script="Six to 36 volts [1].", delay=0.0)
TAR = {"Content-Type": "application/octet-stream"}



@pytest.fixture(scope="module")
def fleet(sample_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A (signs, and has a newer version than B) and B (trusts A); both from the sample index."""
    work = tmp_path_factory.mktemp("fleet-api")
    a = GatewayServer(sample_data_dir, work / "a", profile=PROFILE)
    b = GatewayServer(sample_data_dir, work / "b", profile=PROFILE)
    for srv in (a, b):
        srv.start()
        srv.admin = srv.admin_key()
    try:
        a.cli("signing", "create", "factory")
        a.cli("signing", "export-public", "factory", "--out", str(work / "factory.pub"))
        b.cli("signing", "trust", str(work / "factory.pub"))
        # A moves on: removing a manual builds (and activates) a version B does not have
        manuals = httpx.get(a.url + "/api/v1/manuals", headers=bearer(a.admin)).json()["manuals"]
        r = httpx.delete(f"{a.url}/api/v1/manuals/{manuals[0]['id']}", headers=bearer(a.admin), timeout=120)
        assert r.status_code == 200, r.text
        a.new_version = r.json()["version"]
        yield a, b
    finally:
        a.stop()
        b.stop()


def versions(srv: GatewayServer) -> dict[str, Any]:
    return httpx.get(srv.url + "/api/v1/index/versions", headers=bearer(srv.admin)).json()


def on_disk(srv: GatewayServer) -> dict[str, str]:
    """B's index versions, manuals, pointer and spool: everything an import could leave behind."""
    listing = {}
    for path in sorted(srv.data.rglob("*")):
        rel = path.relative_to(srv.data)
        if rel.parts[0].startswith("gateway.db") or rel.parts[0] == "signing":
            continue
        listing[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return listing



def export(srv: GatewayServer, version: str, **params: Any) -> httpx.Response:
    return httpx.get(f"{srv.url}/api/v1/index/versions/{version}/export", params=params,
                     headers=bearer(srv.admin), timeout=120)


def import_(srv: GatewayServer, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(srv.url + "/api/v1/index/import", content=body, timeout=120,
                      headers={**bearer(srv.admin), **TAR, **(headers or {})})


def test_export_from_a_import_into_b(fleet: Any, tmp_path: Path) -> None:
    a, b = fleet
    r = export(a, a.new_version)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-tar")
    assert r.headers["x-archive-sha256"] == hashlib.sha256(r.content).hexdigest()
    assert r.headers["content-disposition"] == f'attachment; filename="{a.new_version}.tar"'
    assert int(r.headers["content-length"]) == len(r.content)
    archive = r.content

    before = versions(b)
    assert a.new_version not in {v["id"] for v in before["versions"]}
    r = import_(b, archive)
    assert r.status_code == 201, r.text
    report = r.json()
    assert report["version"] == a.new_version and report["status"] == "imported" and report["active"] is False
    assert report["manuals"] == 1 and report["manuals_added"] == 0  # B has that PDF already
    after = versions(b)
    assert after["active"] == before["active"]  # activation stays an explicit step
    listed = {v["id"]: v["active"] for v in after["versions"]}
    assert listed[a.new_version] is False and len(listed) == len(before["versions"]) + 1

    # an OTA retry is a no-op (200); the gzip export is the same version
    assert import_(b, archive).json()["status"] == "already present"
    gz = export(a, a.new_version, gzip="true")
    assert gz.status_code == 200 and gz.headers["content-type"].startswith("application/gzip")
    r = import_(b, gz.content, {"Content-Type": "application/gzip"})
    assert r.status_code == 200 and r.json()["status"] == "already present", r.text

    # the API's archive is the CLI's: `manualqa index import --check` accepts it
    (tmp_path / "v.tar").write_bytes(archive)
    assert "ok: version" in b.cli("index", "import", str(tmp_path / "v.tar"), "--check").stdout
    for srv in (a, b):  # nothing spooled is left behind
        assert not list((srv.data / "uploads").glob("*")) and not list(srv.data.rglob(".tmp-*"))


def members(archive: bytes) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        return [(m, tf.extractfile(m).read()) for m in tf.getmembers()]  # type: ignore[union-attr]


def pack(items: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:", format=tarfile.USTAR_FORMAT) as tf:
        for info, data in items:
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def resigned(archive: bytes, tmp_path: Path) -> bytes:
    """The same archive signed by a key B does not trust (its manifest names that key)."""
    create_key(tmp_path, "rogue")
    signer, key = private_key(tmp_path)
    items = members(archive)
    manifest = items[0][1].replace(b'"key_id": "', f'"key_id": "{signer}", "was": "'.encode(), 1)
    return pack([(items[0][0], manifest), (items[1][0], key.sign(manifest)), *items[2:]])


def test_bad_archives_are_4xx_and_leave_b_alone(fleet: Any, tmp_path: Path) -> None:
    a, b = fleet
    r = export(a, a.new_version)
    assert r.status_code == 200, r.text
    good = r.content
    items = members(good)
    assert [m.name for m, _ in items[:2]] == [MANIFEST_NAME, SIGNATURE_NAME]
    pdf = next(i for i, (m, _) in enumerate(items) if m.name.endswith(".pdf"))
    flipped = bytearray(items[pdf][1])
    flipped[len(flipped) // 2] ^= 1
    traversal = tarfile.TarInfo("../../escaped.txt")
    cases = {
        "tampered payload": pack([*items[:pdf], (items[pdf][0], bytes(flipped)), *items[pdf + 1:]]),
        "tampered manifest": pack([(items[0][0], items[0][1].replace(b'"format_version": 1',
                                                                     b'"format_version": 1 ')), *items[1:]]),
        "truncated": good[: len(good) // 2],
        "wrong key": resigned(good, tmp_path),
        "path traversal": pack([(traversal, b"owned"), *items]),
        "not an archive": b"%PDF-1.4\n" + b"0" * 4000,
    }
    before_versions, before_disk = versions(b), on_disk(b)
    for case, body in cases.items():
        err = error_of(import_(b, body), 400)
        assert err["code"] == "fleet_error", (case, err)
        assert versions(b) == before_versions and on_disk(b) == before_disk, case
    assert "traversal" in error_of(import_(b, cases["path traversal"]), 400)["message"]
    assert "not trust" in error_of(import_(b, cases["wrong key"]), 400)["message"]
    assert error_of(import_(b, b""), 400)["code"] == "invalid_request"
    assert error_of(import_(b, good, {"Content-Type": "multipart/form-data; boundary=x"}), 415)
    assert not (b.data.parent / "escaped.txt").exists() and not (b.workdir / "escaped.txt").exists()
    assert versions(b) == before_versions and on_disk(b) == before_disk


def test_export_errors(fleet: Any) -> None:
    a, b = fleet
    assert error_of(export(a, "v20000101T000000-000000"), 404)["code"] == "not_found"
    err = error_of(export(b, versions(b)["active"]), 400)  # B has no signing key of its own
    assert err["code"] == "fleet_error" and "signing create" in err["message"]
    assert error_of(export(a, a.new_version, signing_key="nope"), 400)["code"] == "fleet_error"
    assert not list((b.data / "uploads").glob("*")) and not list((a.data / "uploads").glob("*"))


def test_only_admins(fleet: Any) -> None:
    a, b = fleet
    reader = a.cli("keys", "create", "reader", "--role", "reader").stdout.strip()
    export_url = f"{a.url}/api/v1/index/versions/{a.new_version}/export"
    assert error_of(httpx.get(export_url, headers=bearer(reader)), 403)["code"] == "forbidden"
    assert error_of(httpx.get(export_url), 401)["code"] == "unauthorized"
    r = httpx.post(a.url + "/api/v1/index/import", content=b"x" * 1000, headers={**bearer(reader), **TAR})
    assert error_of(r, 403)["code"] == "forbidden"
    assert error_of(httpx.post(a.url + "/api/v1/index/import", content=b"x", headers=TAR), 401)
