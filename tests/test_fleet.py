"""Signed index archives (issue 12): export a real index from gateway A, import it into gateway B.

Every bad archive must be refused with a message that says what is wrong, and must leave B's data
directory exactly as it was (listed before and after). Bombs are crafted from headers and a little
compressed padding, never by writing gigabytes.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from gateway.cli import main
from gateway.fleet import FleetError
from gateway.fleet import archive as fleet_archive
from gateway.fleet.archive import check_archive, export_version, import_archive
from gateway.fleet.signing import (
    create_key,
    export_public,
    key_id,
    list_keys,
    private_key,
    signing_dir,
    trust,
    trusted_dir,
    untrust,
)
from retrieval.search import search
from retrieval.types import SearchParams
from retrieval.versions import IndexStore

Members = list[tuple[tarfile.TarInfo, bytes]]
QUERIES = ("How do I flash the firmware?", "What is the piston board pin layout?", "bed leveling")


@dataclass
class Source:
    data: Path
    version: str
    archive: Path
    archive_gz: Path
    pub: Path
    key_id: str
    model: tuple[str, str]


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under root with its kind, size, mode and content hash: 'nothing left behind' is equality."""
    if not root.exists():
        return {}
    listing: dict[str, tuple[Any, ...]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        listing[str(path.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size if path.is_file() else 0,
                                                stat.S_IMODE(st.st_mode), digest)
    return listing


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory, sample_data_dir: Path, embedder: Any) -> Source:
    """Gateway A: a copy of the session's sample index, one signing key, and its archives."""
    base = tmp_path_factory.mktemp("fleet-a")
    data = base / "data"
    shutil.copytree(sample_data_dir, data, ignore=shutil.ignore_patterns("gateway.db*"))
    store = IndexStore(data)
    version = store.active_id()
    assert version
    key = create_key(data, "factory")
    pub = base / "factory.pub"
    pub.write_bytes(export_public(data, "factory"))
    archive = base / "v.tar"
    report = export_version(store, version, archive)
    assert report["key_id"] == key["id"] and report["manuals"] == 2 and not report["compressed"]
    gz = base / "v.tar.gz"
    export_version(store, version, gz, key["id"], compress=True)
    return Source(data, version, archive, gz, pub, key["id"], (embedder.model_id, embedder.model_hash))


@pytest.fixture()
def gw_b(tmp_path: Path, src: Source) -> Path:
    """Gateway B: empty but for A's public key in its trust store."""
    data = tmp_path / "b"
    assert trust(data, src.pub) == {"id": src.key_id, "name": "factory", "already_trusted": False}
    return data


def _hits(store: IndexStore, embedder: Any, query: str) -> list[tuple[Any, ...]]:
    return [(h.chunk_id, h.manual_sha256, h.page, round(h.score, 6))
            for h in search(store, embedder, query, SearchParams(k=5))]


@pytest.mark.parametrize("which", ["archive", "archive_gz"])
def test_export_import_activate_search_same_hits(src: Source, gw_b: Path, embedder: Any, which: str) -> None:
    before_a = snapshot(src.data)
    report = import_archive(IndexStore(gw_b), getattr(src, which), *src.model)
    assert report["status"] == "imported" and report["version"] == src.version and report["active"] is False
    assert report["signed_by"] == src.key_id and report["manuals"] == 2 and report["manuals_added"] == 2
    store_b = IndexStore(gw_b)
    assert [(v["id"], v["active"]) for v in store_b.list_versions()] == [(src.version, False)]
    assert store_b.active_id() is None and not (gw_b / "ACTIVE").exists()  # activation stays explicit
    assert store_b.verify(src.version) == []
    a_manuals = sorted(p.name for p in (src.data / "manuals").glob("*.pdf"))
    assert sorted(p.name for p in (gw_b / "manuals").glob("*.pdf")) == a_manuals
    assert not [p for p in gw_b.rglob("*") if p.name.startswith(".tmp-")]

    store_b.activate(src.version)
    store_a = IndexStore(src.data)
    for query in QUERIES:
        assert _hits(store_b, embedder, query) == _hits(store_a, embedder, query)

    # an OTA retry of the same file is a no-op; the source gateway was only read
    after = snapshot(gw_b)
    again = import_archive(IndexStore(gw_b), src.archive, *src.model)
    assert again["status"] == "already present" and snapshot(gw_b) == after
    assert snapshot(src.data) == before_a


def test_check_writes_nothing(src: Source, gw_b: Path) -> None:
    before = snapshot(gw_b)
    report = check_archive(IndexStore(gw_b), src.archive_gz, *src.model)
    assert report["status"] == "ok" and report["version"] == src.version
    assert snapshot(gw_b) == before


# -- bad archives --------------------------------------------------------------------------------
def _members(path: Path) -> Members:
    with tarfile.open(path) as tf:
        return [(m, tf.extractfile(m).read() if m.isreg() else b"") for m in tf.getmembers()]  # type: ignore[union-attr]


def _pack(members: Members, gz: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w:", format=tarfile.GNU_FORMAT) as tf:
        for info, data in members:
            info = copy.copy(info)
            if info.isreg():
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buf.getvalue()


def _reg(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _resign(members: Members, edit: Callable[[dict[str, Any]], None], signer: Ed25519PrivateKey) -> Members:
    manifest = json.loads(members[0][1])
    edit(manifest)
    body = json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"
    return [(members[0][0], body), (members[1][0], signer.sign(body)), *members[2:]]


def _header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(tarfile.USTAR_FORMAT)


def _signed_prefix(members: Members) -> bytes:
    """MANIFEST.json and MANIFEST.sig as tar bytes, with no end-of-archive marker after them."""
    buf = io.BytesIO()
    tf = tarfile.open(fileobj=buf, mode="w:", format=tarfile.USTAR_FORMAT)
    for info, data in members[:2]:
        tf.addfile(copy.copy(info), io.BytesIO(data))
    return buf.getvalue()


def _flip(src: Source) -> bytes:
    data = bytearray(src.archive.read_bytes())
    with tarfile.open(src.archive) as tf:
        member = tf.getmember(f"payload/indexes/{src.version}/vectors.faiss")
    data[member.offset_data + member.size // 2] ^= 0x01
    return bytes(data)


def _edited(src: Source) -> bytes:
    """MANIFEST.json changed after signing (one more chunk claimed), the signature kept."""
    members = _members(src.archive)
    manifest = json.loads(members[0][1])
    manifest["chunk_count"] += 1
    return _pack([(members[0][0], json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n"), *members[1:]])


def _untrusted(src: Source) -> tuple[bytes, str]:
    stranger = Ed25519PrivateKey.generate()
    members = _resign(_members(src.archive), lambda m: m.update(key_id=key_id(stranger.public_key())), stranger)
    return _pack(members), key_id(stranger.public_key())


def _bigger(src: Source) -> bytes:
    name = f"payload/indexes/{src.version}/vectors.faiss"
    return _pack([(i, d + b"\0" * 1024 if i.name == name else d) for i, d in _members(src.archive)])


def _header_bomb(src: Source) -> bytes:
    """gzip: the signed manifest, then a header claiming 6 GiB for a listed member, then 16 MiB of zeros."""
    members = _members(src.archive)
    raw = _signed_prefix(members) + _header(members[2][0].name, 6 << 30) + bytes(16 << 20)
    return gzip.compress(raw, compresslevel=1)


def _declared_bomb(src: Source) -> bytes:
    """A manifest signed by a trusted key that declares 5 GiB per file: refused before any payload is read."""
    signer = private_key(src.data)[1]

    def inflate(manifest: dict[str, Any]) -> None:
        for entry in manifest["files"]:
            entry["size"] = 5 << 30

    return _pack(_resign(_members(src.archive), inflate, signer)[:2])


def _pax_bomb(_: Source) -> bytes:
    return gzip.compress(_header("././@PaxHeader", 5 << 30, tarfile.XHDTYPE) + bytes(4 << 20), compresslevel=1)


def _manifest_bomb(_: Source) -> bytes:
    return gzip.compress(_header("MANIFEST.json", 7 << 30) + bytes(4 << 20), compresslevel=1)


def _symlink(src: Source) -> bytes:
    link = tarfile.TarInfo("payload/manuals/link.pdf")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return _pack([*_members(src.archive), (link, b"")])


BAD: dict[str, tuple[Callable[[Source], bytes], str]] = {
    "truncated": (lambda s: s.archive.read_bytes()[: s.archive.stat().st_size // 2], "is truncated"),
    "truncated-gzip": (lambda s: s.archive_gz.read_bytes()[: s.archive_gz.stat().st_size // 2], "is truncated"),
    "truncated-after-signature": (lambda s: _signed_prefix(_members(s.archive)), "is truncated or incomplete"),
    "flipped-payload-byte": (_flip, "vectors.faiss: sha256 does not match the signed manifest"),
    "manifest-edited-after-signing": (_edited, "signature does not verify with trusted key"),
    "dot-dot-member": (lambda s: _pack([*_members(s.archive), _reg("payload/../../evil")]), "path traversal"),
    "parent-member": (lambda s: _pack([_reg("../evil"), *_members(s.archive)]), "'../evil' contains '..'"),
    "absolute-member": (lambda s: _pack([*_members(s.archive), _reg("/etc/evil")]), "has an absolute path"),
    "symlink-member": (_symlink, "is a symbolic link; an index archive holds regular files only"),
    "unlisted-member": (lambda s: _pack([*_members(s.archive), _reg("payload/manuals/extra.pdf")]),
                        "is not listed in the signed manifest"),
    "member-larger-than-declared": (_bigger, "more than the"),
    "gzip-header-bomb": (_header_bomb, "6442450944 bytes, more than the"),
    "declared-size-bomb": (_declared_bomb, "over this gateway's import cap"),
    "pax-header-bomb": (_pax_bomb, "refused before reading further"),
    "manifest-bomb": (_manifest_bomb, "MANIFEST.json is 7516192768 bytes"),
    "not-signed": (lambda s: _pack([m for m in _members(s.archive) if m[0].name != "MANIFEST.sig"]),
                   "it is not signed"),
    "manifest-nested-too-deep": (
        lambda s: _pack([_reg("MANIFEST.json", b"[" * 100_000), _reg("MANIFEST.sig", bytes(64))]),
        "MANIFEST.json is not JSON"),
    "zip-file": (lambda s: b"PK\x03\x04" + bytes(200), "is a zip file"),
    "not-an-archive": (lambda s: os.urandom(4096), "is not a manualqa index archive"),
    "empty-file": (lambda s: b"", "is not a manualqa index archive"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_archive_is_refused_and_leaves_nothing(src: Source, gw_b: Path, tmp_path: Path, case: str) -> None:
    build, message = BAD[case]
    bad = tmp_path / "bad.tar"
    bad.write_bytes(build(src))
    before = snapshot(gw_b)
    started = time.perf_counter()
    with pytest.raises(FleetError) as err:
        import_archive(IndexStore(gw_b), bad, *src.model)
    assert message in str(err.value), str(err.value)
    # a bomb is refused on its header, not read to the end (the message says which check refused it);
    # 60 s only bounds a hang, whatever the load on the box
    assert time.perf_counter() - started < 60
    assert snapshot(gw_b) == before
    assert err.value.http_status == 400 and err.value.code == "fleet_error"


def test_untrusted_signer_is_named(src: Source, gw_b: Path, tmp_path: Path) -> None:
    data, stranger = _untrusted(src)
    bad = tmp_path / "stranger.tar"
    bad.write_bytes(data)
    before = snapshot(gw_b)
    with pytest.raises(FleetError, match=f"signed by key {stranger}, which this gateway does not trust"):
        import_archive(IndexStore(gw_b), bad, *src.model)
    assert snapshot(gw_b) == before
    untrust(gw_b, src.key_id)  # once A's key is revoked, A's own archive is refused the same way
    with pytest.raises(FleetError, match=f"signed by key {src.key_id}, which this gateway does not trust"):
        import_archive(IndexStore(gw_b), src.archive, *src.model)


def test_other_embedding_model_is_refused(src: Source, gw_b: Path) -> None:
    before = snapshot(gw_b)
    with pytest.raises(FleetError, match="was built with embedding model .*this gateway runs"):
        import_archive(IndexStore(gw_b), src.archive, src.model[0], "0" * 64)
    with pytest.raises(FleetError, match="this gateway runs local:other"):
        import_archive(IndexStore(gw_b), src.archive, "local:other", src.model[1])
    assert snapshot(gw_b) == before


def test_same_version_with_other_content_is_refused(src: Source, gw_b: Path) -> None:
    import_archive(IndexStore(gw_b), src.archive, *src.model)
    manifest = gw_b / "indexes" / src.version / "manifest.json"
    manifest.write_bytes(manifest.read_bytes() + b" ")
    before = snapshot(gw_b)
    with pytest.raises(FleetError, match="already exists on this gateway with other content"):
        import_archive(IndexStore(gw_b), src.archive, *src.model)
    assert snapshot(gw_b) == before


def test_failure_while_placing_undoes_what_was_placed(src: Source, gw_b: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    IndexStore(gw_b).clean_leftovers()  # a used gateway: its lock file exists already
    before = snapshot(gw_b)

    def no_rename(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fleet_archive.os, "rename", no_rename)
    with pytest.raises(OSError, match="No space left"):
        import_archive(IndexStore(gw_b), src.archive, *src.model)
    assert snapshot(gw_b) == before


def test_busy_store_is_a_clear_error(src: Source, gw_b: Path) -> None:
    store = IndexStore(gw_b)
    with store._locked():  # an ingest is running
        with pytest.raises(FleetError, match="cannot import v.tar now: another ingest or index operation"):
            import_archive(IndexStore(gw_b), src.archive, *src.model)
    assert not (gw_b / "indexes").exists()


def test_export_refuses_what_it_cannot_vouch_for(src: Source, tmp_path: Path) -> None:
    store = IndexStore(src.data)
    with pytest.raises(FleetError, match="already exists"):
        export_version(store, src.version, src.archive)
    with pytest.raises(FleetError, match="unknown index version"):
        export_version(store, "v20990101T000000-abcdef", tmp_path / "x.tar")
    key_file = signing_dir(src.data) / f"{src.key_id}.key"
    key_file.chmod(0o644)
    try:
        with pytest.raises(FleetError, match="readable by others"):
            export_version(store, src.version, tmp_path / "x.tar")
    finally:
        key_file.chmod(0o600)
    assert not (tmp_path / "x.tar").exists()


# -- keys ------------------------------------------------------------------------------------------
def test_keys_are_private_and_ids_derive_from_the_key(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = create_key(data, "line-1")
    key_path = signing_dir(data) / f"{key['id']}.key"
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(signing_dir(data).stat().st_mode) == 0o700
    kid, private = private_key(data)
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert kid == key["id"] == hashlib.sha256(raw).hexdigest()[:16]
    with pytest.raises(FleetError, match="already exists"):
        create_key(data, "line-1")
    with pytest.raises(FleetError, match="key name"):
        create_key(data, "../x")
    create_key(data, "line-2")
    with pytest.raises(FleetError, match="several signing keys"):
        private_key(data)
    assert sorted((k["name"], k["private"], k["trusted"]) for k in list_keys(data)) == [
        ("line-1", True, False), ("line-2", True, False)]

    other = tmp_path / "other"
    pub = tmp_path / "line-1.pub"
    pub.write_bytes(export_public(data, "line-1"))
    assert trust(other, pub)["id"] == key["id"]
    assert trust(other, pub)["already_trusted"] is True
    assert [(k["id"], k["private"], k["trusted"]) for k in list_keys(other)] == [(key["id"], False, True)]

    doc = json.loads(pub.read_text())
    forged = tmp_path / "forged.pub"
    forged.write_text(json.dumps({**doc, "id": "0123456789abcdef"}))
    with pytest.raises(FleetError, match="says key id 0123456789abcdef but its key has id"):
        trust(other, forged)
    pem = tmp_path / "vendor.pem"
    pem.write_bytes(Ed25519PrivateKey.generate().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    assert trust(other, pem)["name"] == "vendor"
    junk = tmp_path / "junk.pub"
    junk.write_text("hello")
    with pytest.raises(FleetError, match="not a manualqa public key file"):
        trust(other, junk)
    assert len(list(trusted_dir(other).iterdir())) == 2


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_end_to_end(src: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any) -> None:
    import retrieval.embedders

    monkeypatch.setattr(retrieval.embedders, "load_embedder", lambda *a, **k: embedder)
    monkeypatch.chdir(tmp_path)  # no stray manualqa.toml
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(src.data, a)
    shutil.rmtree(a / "signing")
    runner = CliRunner()

    def on(data: Path, *args: str) -> Result:
        return runner.invoke(main, list(args), env={"MANUALQA_DATA": str(data), "MANUALQA_CONFIG": ""},
                             catch_exceptions=False)

    def ok(data: Path, *args: str) -> Any:
        r = on(data, *args)
        assert r.exit_code == 0, r.output + r.stderr
        return json.loads(r.stdout) if "--json" in args else r.stdout

    key = ok(a, "signing", "create", "depot", "--json")
    assert "created signing key" in ok(a, "signing", "create", "spare")
    assert sorted(k["name"] for k in ok(a, "signing", "list", "--json")) == ["depot", "spare"]
    ok(a, "signing", "export-public", "depot", "--out", "depot.pub")
    assert json.loads(ok(a, "signing", "export-public", key["id"]))["id"] == key["id"]

    r = on(a, "index", "export", src.version, "v.tar")
    assert r.exit_code == 1 and "several signing keys" in r.stderr and "Traceback" not in r.output
    exported = ok(a, "index", "export", src.version, "v.tar", "--key", "depot", "--json")
    assert exported["key_id"] == key["id"] and Path("v.tar").stat().st_size == exported["bytes"]

    r = on(b, "index", "import", "v.tar")
    assert r.exit_code == 1 and f"Error: archive is signed by key {key['id']}" in r.stderr
    assert "trusted: key" in ok(b, "signing", "trust", "depot.pub")
    assert ok(b, "index", "import", "v.tar", "--check", "--json")["status"] == "ok"
    assert not (b / "indexes").exists()
    out = ok(b, "index", "import", "v.tar")
    assert f"imported version {src.version} (inactive" in out and f"index activate {src.version}" in out
    assert [(v["id"], v["active"]) for v in ok(b, "index", "list", "--json")] == [(src.version, False)]
    assert "already present" in ok(b, "index", "import", "v.tar")
    ok(b, "index", "activate", src.version)
    found = ok(b, "search", QUERIES[0], "--k", "3", "--json")
    assert found["version"] == src.version and len(found["hits"]) == 3

    Path("bad.tar").write_bytes(Path("v.tar").read_bytes()[:5000])
    r = on(b, "index", "import", "bad.tar", "--json")
    assert r.exit_code == 1 and "Error: bad.tar is truncated" in r.stderr and "Traceback" not in r.output
    r = on(b, "index", "import", "v.tar", "--max-size", "1")
    assert r.exit_code == 1 and "over this gateway's import cap of 1048576 bytes" in r.stderr
    assert "no longer trusted" in ok(b, "signing", "untrust", "depot")
