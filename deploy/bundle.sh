#!/usr/bin/env bash
# Build an offline install bundle of manualqa (issue 12: an appliance that installs without a network).
#
# Why: a gateway on a factory floor or a ship often has no route to a package index. On a connected
# machine of the gateway's architecture and Python version, this collects every wheel that
# `make install` installs: the set of requirements.lock (issue 22: every version pinned, every file
# checked against the lock's hashes; no torch: only the [st] extra needs it), the portable llama-cpp-python wheel
# that the Makefile compiled (never one built for this machine's own CPU), manualqa itself; with
# install.sh, BUNDLE-INFO, the wheelhouse's own requirements.lock and SHA256SUMS, so that the gateway
# installs exactly that set from these files alone: `bash install.sh [PREFIX]`.
#
# Usage: deploy/bundle.sh [OUTDIR]     (default: dist/; `make bundle` runs it with the venv's Python)
#   writes OUTDIR/bundle/ and OUTDIR/manualqa-bundle-<version>-<arch>.tar.gz
# Environment:
#   PY               the Python whose version the gateway runs (default python3); wheels are for it
#   LLAMA_WHEEL_DIR  required: the llama-cpp-python build, its wheel and BUILD-INFO (`make llama-wheel`:
#                    .whl/llama-cpp-python-<version>-portable-<arch>-<key>/). A native build is refused
#                    unless BUNDLE_ALLOW_NATIVE=1 (a bundle travels to other CPUs)
#   LOCK             the lock (default: requirements.lock at the repository root)
#   BUNDLE_PIP_ARGS  more `pip wheel` options for every download
#   E5_DIR           the converted multilingual-e5 companion (`make install` writes it; `make bundle` passes
#                    it): shipped as embedders/multilingual-e5-small-int8/ when complete (ONNX and a
#                    tokenizer: no architecture of its own), so the gateway searches Chinese, German, ...
#                    by meaning without converting anything there. Unset or incomplete: none, said loudly
# docs/operations.md, "Air-gapped install (bundle)", has the whole procedure.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
py=${PY:-python3}
lock=${LOCK:-$root/requirements.lock}
llama_dir=${LLAMA_WHEEL_DIR:-}
bundle=$out/bundle
wheelhouse=$bundle/wheelhouse
start=$SECONDS
die() { echo "bundle.sh: $*" >&2; exit 1; }

# The llama-cpp-python wheel: compiled by the Makefile from the lock's sdist for a stated CPU baseline.
[ -n "$llama_dir" ] || die "set LLAMA_WHEEL_DIR to a llama-cpp-python build (make llama-wheel; make bundle does it)"
[ -s "$llama_dir/BUILD-INFO" ] || die "$llama_dir/BUILD-INFO is missing: not a build of make llama-wheel"
llama_info() { sed -n "s/^$1=//p" "$llama_dir/BUILD-INFO"; }
llama_wheels=("$llama_dir"/llama_cpp_python-*.whl)
{ [ "${#llama_wheels[@]}" = 1 ] && [ -f "${llama_wheels[0]}" ]; } || die "$llama_dir holds no single llama_cpp_python wheel"
if [ "$(llama_info build)" != portable ] && [ "${BUNDLE_ALLOW_NATIVE:-0}" != 1 ]; then
    die "$llama_dir is a $(llama_info build) build ($(llama_info cmake_args)), but a bundle runs on other CPUs:" \
        "build it portable (make bundle without LLAMA_BUILD), or set BUNDLE_ALLOW_NATIVE=1 for gateways with this CPU"
fi
[ -s "$lock" ] || die "no lock at $lock (make lock)"
pin=$(sed -n 's/^llama-cpp-python==\([^ ;]*\).*/\1/p' "$lock")
[ "$(llama_info version)" = "$pin" ] || die "$llama_dir is llama-cpp-python $(llama_info version), the lock pins ${pin:-none}"
sdist=$(llama_info sdist_sha256)
{ [ -n "$sdist" ] && grep -q -- "--hash=sha256:$sdist" "$lock"; } ||
    die "$llama_dir was built from an sdist whose sha256 the lock does not list"

rm -rf "$bundle"
mkdir -p "$wheelhouse"
# pip builds manualqa in the tree, and setuptools copies into build/lib without removing what is no
# longer in the sources: a module deleted since the last build would go into the wheel. Start clean.
rm -rf "$root/build"
tmp=$(mktemp -d)
trap 'rm -rf "$root/build" "$tmp"' EXIT

# The lock's set without dependency resolution, every download checked against the lock's hashes (the
# markers pick this Python's and platform's pins), less llama-cpp-python, whose wheel is the build above.
# Then manualqa's own wheel.
awk '/^[^ #]/ { p = index($0, "llama-cpp-python==") != 1 } p' "$lock" >"$tmp/lock.txt"
# shellcheck disable=SC2086  # the *_PIP_ARGS are lists of options
"$py" -m pip wheel --quiet --no-deps --require-hashes --wheel-dir "$wheelhouse" ${BUNDLE_PIP_ARGS:-} -r "$tmp/lock.txt"
# shellcheck disable=SC2086
"$py" -m pip wheel --quiet --no-deps --wheel-dir "$wheelhouse" ${BUNDLE_PIP_ARGS:-} "$root"
cp "${llama_wheels[0]}" "$wheelhouse/"

# The runtime set needs no torch (the [st] extra does) and no CUDA package: a torch wheel that requires
# one (or CUDA wheels lying here) means a lock that pulls in torch's CUDA build.
wheels() { find "$wheelhouse" -name '*.whl' -printf '%f\n'; }
cuda_wheels=$(wheels | grep -E '^(nvidia_|triton-|cuda_)' || true)
cuda_torch=$("$py" - "$wheelhouse" <<'EOF'
import pathlib, sys, zipfile
for whl in sorted(pathlib.Path(sys.argv[1]).glob("torch-*.whl")):
    try:
        with zipfile.ZipFile(whl) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            text = zf.read(meta).decode()
    except (zipfile.BadZipFile, StopIteration):
        continue
    needs = sorted({line.split(":", 1)[1].split(";")[0].strip() for line in text.splitlines()
                    if line.startswith("Requires-Dist:") and "nvidia-" in line})
    if needs:
        print(f"{whl.name} requires {', '.join(needs)}")
EOF
)
cuda=$(printf '%s\n%s\n' "$cuda_torch" "$cuda_wheels" | sed '/^$/d')
if [ -n "$cuda" ]; then
    echo "bundle.sh: the wheelhouse holds torch's CUDA build:" >&2
    echo "$cuda" | sed 's/^/  /' >&2
    die "a bundle ships no torch and no CUDA package; if the lock must hold torch, use its CPU build (download.pytorch.org/whl/cpu)"
fi

# The wheelhouse's own lock: each wheel's name, version and sha256, which install.sh installs with
# --require-hashes --no-deps: the lock's set, exactly, with nothing resolved on the gateway.
{
    echo "# $(basename "$lock") (sha256 $(sha256sum "$lock" | cut -d' ' -f1)) as this bundle's wheels, with"
    echo "# llama-cpp-python $(llama_info version) ($(llama_info build): $(llama_info cmake_args)). install.sh installs exactly these."
    for whl in $(wheels | LC_ALL=C sort); do
        name=$(echo "$whl" | cut -d- -f1 | tr '[:upper:]_.' '[:lower:]--')
        echo "$name==$(echo "$whl" | cut -d- -f2) --hash=sha256:$(sha256sum "$wheelhouse/$whl" | cut -d' ' -f1)"
    done
} >"$bundle/requirements.lock"

own=$(wheels | grep '^manualqa-')
version=$(echo "$own" | cut -d- -f2)
arch=$("$py" -c 'import platform; print(platform.machine())')
pytag=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
# The oldest glibc that runs every wheel: per wheel the lowest manylinux tag it carries, then the highest
# of those. (A wheel compiled here, tagged linux_<arch>, may need this machine's glibc and libstdc++ too.)
glibc=$(wheels | sed -E 's/manylinux2014/manylinux_2_17/g; s/manylinux2010/manylinux_2_12/g; s/manylinux1_/manylinux_2_5_/g' |
    awk '{ m = 0; while (match($0, /manylinux_2_[0-9]+/)) { v = substr($0, RSTART + 12, RLENGTH - 12) + 0
           if (m == 0 || v < m) m = v; $0 = substr($0, RSTART + RLENGTH) } if (m > n) n = m }
         END { if (n) print "2." n }')

# The multilingual companion: the converted directory as it is (its manualqa_embedder.json names the
# source wheel and the weights' sha256), under the name embedding.companion = "auto" looks for.
companion="none (E5_DIR unset: the gateway searches with the built-in English embedder alone)"
if [ -n "${E5_DIR:-}" ]; then
    if [ -s "$E5_DIR/model.onnx" ] && [ -s "$E5_DIR/tokenizer.json" ] && [ -s "$E5_DIR/manualqa_embedder.json" ]; then
        mkdir -p "$bundle/embedders"
        cp -r "$E5_DIR" "$bundle/embedders/multilingual-e5-small-int8"
        companion="multilingual-e5-small-int8 (model.onnx sha256 $(sha256sum "$E5_DIR/model.onnx" | cut -c1-12))"
    else
        companion="none ($E5_DIR is not a complete conversion: make multilingual says why)"
    fi
fi
case $companion in none*) echo "bundle.sh: warning: no multilingual companion embedder in the bundle: ${companion#none }" >&2 ;; esac

# What the installer checks before it touches the target (arch, Python, glibc) and what it installs.
cat >"$bundle/BUNDLE-INFO" <<EOF
name=manualqa
version=$version
arch=$arch
python=$pytag
glibc=$glibc
built_with=$("$py" -c 'import platform; print("Python", platform.python_version(), "/", *platform.libc_ver())')
source=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
requirements=requirements.lock: $(basename "$lock"), manualqa[llm,server]==$version
llama_cpp=$(llama_info version) $(llama_info build) build ($(llama_info cmake_args))
companion=$companion
EOF
install -m 0755 "$root/deploy/install.sh" "$bundle/install.sh"

# Every file, sorted, paths relative to the bundle (`sha256sum -c SHA256SUMS` there); the list is
# written beside the bundle first, so that it does not list itself.
(cd "$bundle" && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum) >"$out/SHA256SUMS.tmp"
mv "$out/SHA256SUMS.tmp" "$bundle/SHA256SUMS"

# The archive unpacks into manualqa-bundle-<version>-<arch>/. Wheels are compressed already: gzip -1.
name=manualqa-bundle-$version-$arch
archive=$out/$name.tar.gz
tar -C "$out" --transform "s,^bundle,$name," -cf - bundle | gzip -1 >"$archive.tmp"
mv "$archive.tmp" "$archive"

echo "bundle:   $bundle ($(du -sh "$bundle" | cut -f1), $(wc -l <"$bundle/SHA256SUMS") files in SHA256SUMS, $(wheels | wc -l) wheels)"
echo "llama:    llama-cpp-python $(llama_info version), $(llama_info build) build: $(llama_info cmake_args)"
echo "archive:  $archive ($(du -h "$archive" | cut -f1))"
echo "sha256:   $(sha256sum "$archive" | cut -d' ' -f1)  $(basename "$archive")"
echo "          $(sha256sum "$bundle/SHA256SUMS" | cut -d' ' -f1)  SHA256SUMS"
echo "e5:       $companion"
echo "for:      $arch, $pytag; built in $((SECONDS - start)) s"
echo "install:  tar xzf $(basename "$archive") && sudo bash $name/install.sh [/opt/manualqa]"
