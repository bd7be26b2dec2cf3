"""The offline install bundle (issue 12): deploy/install.sh refuses a bundle that does not match its
SHA256SUMS (a changed, missing or unlisted file) or was built for another machine, before it creates
anything; it installs an intact one from the wheelhouse alone; deploy/bundle.sh writes a bundle that
verifies and refuses a wheelhouse holding torch's CUDA build.

Fast and offline: the bundles here are tiny fakes (bundle.sh runs with a stand-in for `pip wheel`);
the real bundle and its install in a network namespace are in docs/operations.md."""

from __future__ import annotations

import base64
import hashlib
import os
import platform
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INSTALL_SH = REPO / "deploy" / "install.sh"
BUNDLE_SH = REPO / "deploy" / "bundle.sh"
PYTAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
VERSION = "0.0.1"


def tiny_wheel(path: Path) -> None:
    """A wheel named manualqa with the two extras and a `manualqa` script that prints its version."""
    info = f"manualqa-{VERSION}.dist-info"
    files = {
        "mqa_fake/__init__.py": f"def main():\n    print('manualqa, version {VERSION}')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: manualqa\nVersion: {VERSION}\n"
        "Provides-Extra: llm\nProvides-Extra: server\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test_bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nmanualqa = mqa_fake:main\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            data = text.encode()
            zf.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")


def write_sums(bundle: Path) -> None:
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    lines = [f"{hashlib.sha256((bundle / f).read_bytes()).hexdigest()}  {f}" for f in files if f != "SHA256SUMS"]
    (bundle / "SHA256SUMS").write_text("\n".join(lines) + "\n")


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """An intact bundle for this machine: BUNDLE-INFO, install.sh, a wheelhouse of one tiny wheel."""
    b = tmp_path / "bundle"
    (b / "wheelhouse").mkdir(parents=True)
    tiny_wheel(b / "wheelhouse" / f"manualqa-{VERSION}-py3-none-any.whl")
    (b / "BUNDLE-INFO").write_text(
        f"name=manualqa\nversion={VERSION}\narch={platform.machine()}\npython={PYTAG}\nglibc=2.17\nsource=test\nbuilt_at=now\n"
    )
    (b / "install.sh").write_bytes(INSTALL_SH.read_bytes())
    write_sums(b)
    return b


def install(bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(bundle / "install.sh"), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_intact_bundle_verifies(bundle: Path, tmp_path: Path) -> None:
    r = install(bundle, "--verify-only", str(tmp_path / "prefix"))
    assert r.returncode == 0, r.stderr
    assert "verified: 3 files" in r.stdout
    assert f"manualqa {VERSION} for {platform.machine()}, {PYTAG}" in r.stdout
    assert not (tmp_path / "prefix").exists()


def refused(bundle: Path, tmp_path: Path) -> str:
    """Runs a real install (not --verify-only): it must fail and leave no venv behind."""
    r = install(bundle, str(tmp_path / "prefix"))
    assert r.returncode != 0, r.stdout
    assert r.stderr.startswith("install.sh: ") or "\ninstall.sh: " in r.stderr
    assert not (tmp_path / "prefix").exists()
    return r.stderr


def test_changed_file_is_refused(bundle: Path, tmp_path: Path) -> None:
    wheel = bundle / "wheelhouse" / f"manualqa-{VERSION}-py3-none-any.whl"
    data = bytearray(wheel.read_bytes())
    data[100] ^= 1
    wheel.write_bytes(bytes(data))
    err = refused(bundle, tmp_path)
    assert f"wheelhouse/manualqa-{VERSION}-py3-none-any.whl: FAILED" in err
    assert "does not match its SHA256SUMS" in err


def test_partial_copy_is_refused(bundle: Path, tmp_path: Path) -> None:
    (bundle / "BUNDLE-INFO").unlink()
    err = refused(bundle, tmp_path)
    assert "BUNDLE-INFO" in err and "does not match its SHA256SUMS" in err


def test_unlisted_wheel_is_refused(bundle: Path, tmp_path: Path) -> None:
    # pip would install any wheel lying in the wheelhouse, so one that the list does not name is refused.
    (bundle / "wheelhouse" / "evil-1.0-py3-none-any.whl").write_bytes(b"PK")
    err = refused(bundle, tmp_path)
    assert "wheelhouse/evil-1.0-py3-none-any.whl" in err
    assert "does not list" in err


@pytest.mark.parametrize("sums", [None, "", "0123  BUNDLE-INFO\n"])
def test_missing_empty_or_malformed_sums_are_refused(bundle: Path, tmp_path: Path, sums: str | None) -> None:
    listed = (bundle / "SHA256SUMS").read_text()
    if sums is None:
        (bundle / "SHA256SUMS").unlink()
    else:
        (bundle / "SHA256SUMS").write_text(listed + sums if sums else "")
    err = refused(bundle, tmp_path)
    assert "SHA256SUMS" in err


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("arch", "riscv128", "the bundle is for riscv128"),
        ("python", "cp29", "the bundle's wheels are for cp29"),
        ("glibc", "2.999", "need glibc 2.999 or newer"),
    ],
)
def test_bundle_for_another_machine_is_refused(
    bundle: Path, tmp_path: Path, key: str, value: str, message: str
) -> None:
    info = bundle / "BUNDLE-INFO"
    info.write_text(
        "".join(
            f"{key}={value}\n" if line.startswith(f"{key}=") else line + "\n" for line in info.read_text().splitlines()
        )
    )
    write_sums(bundle)  # a consistent bundle, built elsewhere
    assert message in refused(bundle, tmp_path)


def test_installs_from_the_wheelhouse_alone(bundle: Path, tmp_path: Path) -> None:
    # The host's pip configuration and PIP_* variables are ignored (this one would make the install fail).
    prefix = tmp_path / "prefix"
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nrequire-hashes = true\nindex-url = http://127.0.0.1:9/simple\n")
    env = {**os.environ, "PYTHON": sys.executable, "PIP_CONFIG_FILE": str(conf), "PIP_REQUIRE_HASHES": "1"}
    r = subprocess.run(
        ["bash", str(bundle / "install.sh"), str(prefix)], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert f"installed: manualqa, version {VERSION} in {prefix}" in r.stdout
    assert f"{prefix}/bin/manualqa ingest" in r.stdout and "install-service" in r.stdout
    out = subprocess.run([str(prefix / "bin" / "manualqa")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"manualqa, version {VERSION}"


def fake_python(tmp_path: Path, wheels: list[str]) -> Path:
    """Stands in for the Python of `make bundle`: `-m pip wheel` writes the named (empty) wheels."""
    stub = tmp_path / "python"
    stub.write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2 $3" = "-m pip wheel" ]; then\n'
        '  while [ $# -gt 0 ]; do [ "$1" = --wheel-dir ] && dir=$2; shift; done\n'
        f'  for w in {" ".join(wheels)}; do echo "$w" > "$dir/$w"; done\n'
        "  exit 0\nfi\n"
        f'exec {sys.executable} "$@"\n'
    )
    stub.chmod(0o755)
    return stub


def test_bundle_sh_writes_a_bundle_that_verifies(tmp_path: Path) -> None:
    wheels = [
        "manualqa-9.9.9-py3-none-any.whl",
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        # runs on glibc 2.17 (its lowest tag), so the bundle needs 2.28 (torch), not 2.35
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_35_x86_64.whl",
    ]
    out = tmp_path / "dist"
    env = {**os.environ, "PY": str(fake_python(tmp_path, wheels))}
    r = subprocess.run(["bash", str(BUNDLE_SH), str(out)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    b = out / "bundle"
    listed = sorted(line.split("  ", 1)[1] for line in (b / "SHA256SUMS").read_text().splitlines())
    assert listed == ["BUNDLE-INFO", "install.sh", *(f"wheelhouse/{w}" for w in sorted(wheels))]
    info = (b / "BUNDLE-INFO").read_text()
    assert "version=9.9.9\n" in info and f"python={PYTAG}\n" in info and f"arch={platform.machine()}\n" in info
    assert "glibc=2.28\n" in info
    assert (b / "install.sh").read_bytes() == INSTALL_SH.read_bytes() and os.access(b / "install.sh", os.X_OK)
    v = install(b, "--verify-only")
    assert v.returncode == 0, v.stderr
    name = f"manualqa-bundle-9.9.9-{platform.machine()}"
    with tarfile.open(out / f"{name}.tar.gz") as tar:
        assert f"{name}/install.sh" in tar.getnames() and f"{name}/SHA256SUMS" in tar.getnames()


def test_bundle_sh_refuses_torch_cuda_build(tmp_path: Path) -> None:
    wheels = [
        "manualqa-9.9.9-py3-none-any.whl",
        "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl",
    ]
    env = {**os.environ, "PY": str(fake_python(tmp_path, wheels))}
    r = subprocess.run(
        ["bash", str(BUNDLE_SH), str(tmp_path / "dist")], capture_output=True, text=True, env=env, timeout=60
    )
    assert r.returncode != 0
    assert "nvidia_cublas_cu12" in r.stderr and "download.pytorch.org/whl/cpu" in r.stderr
    assert not list((tmp_path / "dist").glob("*.tar.gz"))
