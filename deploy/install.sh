#!/usr/bin/env bash
# Install manualqa from an offline bundle (made by deploy/bundle.sh, `make bundle`), without a network.
#
# Why: the gateway has no package index to reach, and a bundle copied on a USB stick or over a flaky
# link can arrive cut short or altered. So this first checks every file against SHA256SUMS and refuses
# a file that is missing, changed or not listed (pip would install any wheel lying in the wheelhouse),
# then checks that the bundle was built for this machine's architecture, Python and glibc, and only then
# creates (or upgrades) a venv and installs the bundle's requirements.lock (every wheel, its sha256,
# no dependency resolution) from the bundle's wheelhouse alone: pip ignores every index and the host's
# pip configuration; `pip check` then proves the set complete.
#
# Usage: install.sh [--verify-only] [--bundle DIR] [PREFIX]
#   PREFIX         the venv to create or upgrade (default /opt/manualqa)
#   --bundle DIR   the bundle (default: the directory this script is in)
#   --verify-only  check the files, the architecture, the Python and glibc, install nothing
# Environment: PYTHON, the interpreter the venv is made from (default python3; it must have venv,
#   on Debian the python3-venv package).
set -euo pipefail

die() { echo "install.sh: $*" >&2; exit 1; }

bundle=$(cd "$(dirname "$0")" && pwd)
prefix=/opt/manualqa
verify_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --verify-only) verify_only=1 ;;
        --bundle) [ $# -ge 2 ] || die "--bundle needs a directory"; bundle=$2; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) prefix=$1 ;;
    esac
    shift
done
python=${PYTHON:-python3}
start=$SECONDS

# 1. Every listed file present and unchanged, and no file that the list does not name.
[ -d "$bundle" ] || die "no bundle directory $bundle"
bundle=$(cd "$bundle" && pwd)
cd "$bundle"
[ -s SHA256SUMS ] || die "$bundle/SHA256SUMS is missing or empty: not a manualqa bundle, or an incomplete copy; refusing to install"
if ! failed=$(LC_ALL=C sha256sum --check --strict --quiet SHA256SUMS 2>&1); then
    echo "$failed" | sed 's/^/  /' >&2
    die "the bundle in $bundle does not match its SHA256SUMS (a file above is missing or changed): copy it again; refusing to install"
fi
extra=$(LC_ALL=C comm -13 <(sed -E 's/^[0-9a-f]{64} [ *]//' SHA256SUMS | LC_ALL=C sort) \
    <(find . ! -type d ! -path ./SHA256SUMS -printf '%P\n' | LC_ALL=C sort))
if [ -n "$extra" ]; then
    echo "$extra" | sed 's/^/  /' >&2
    die "the bundle in $bundle holds files that SHA256SUMS does not list (above): remove them or copy the bundle again; refusing to install"
fi
echo "verified: $(wc -l <SHA256SUMS) files in $bundle match SHA256SUMS"

# 2. Built for this machine: the wheels are for one architecture and one Python version.
info() { sed -n "s/^$1=//p" BUNDLE-INFO; }
version=$(info version)
[ -n "$version" ] || die "BUNDLE-INFO names no version"
[ "$(info arch)" = "$(uname -m)" ] || die "the bundle is for $(info arch), this machine is $(uname -m): build one here (make bundle)"
command -v "$python" >/dev/null || die "no $python here: install Python $(info python) or set PYTHON"
pytag=$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
[ "$(info python)" = "$pytag" ] || die "the bundle's wheels are for $(info python), $python is $pytag: set PYTHON to a $(info python) interpreter"
need=$(info glibc)
if [ -n "$need" ]; then
    have=$("$python" -c 'import platform; print(platform.libc_ver()[1])')
    [ "$(printf '%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ] ||
        die "the bundle's wheels need glibc $need or newer, this system has ${have:-none}: build the bundle on this OS release"
fi
echo "bundle:   manualqa $version for $(info arch), $(info python) (source $(info source), built $(info built_at))"
[ -s requirements.lock ] || die "the bundle has no requirements.lock: made by an older bundle.sh; build it again (make bundle)"
[ "$verify_only" = 1 ] && exit 0

# 3. The venv, and the packages from the wheelhouse only (no index, no host pip.conf, no PIP_* variables).
if [ ! -x "$prefix/bin/python" ]; then
    "$python" -m venv "$prefix" || die "could not create a venv at $prefix (Debian: apt install python3-venv)"
    fresh=1
else
    echo "upgrading the venv at $prefix"
    fresh=0
fi
pip() { PIP_CONFIG_FILE=/dev/null "$prefix/bin/python" -m pip --isolated --disable-pip-version-check \
    install --no-index --only-binary=:all: --no-cache-dir --find-links "$bundle/wheelhouse" --quiet "$@"; }
# The bundle's requirements.lock names every wheel with its sha256 (the build's lock set, issue 22):
# installed as listed, without resolving anything here, then checked for completeness.
pip --no-deps --require-hashes -r "$bundle/requirements.lock"
# Same version over an older install of it: put the bundle's own code in place all the same.
[ "$fresh" = 1 ] || pip --force-reinstall --no-deps "manualqa==$version"
if ! broken=$(PIP_CONFIG_FILE=/dev/null "$prefix/bin/python" -m pip --isolated --disable-pip-version-check check 2>&1); then
    echo "$broken" | sed 's/^/  /' >&2
    die "the packages installed in $prefix do not fit together (above): the bundle is not one lock's set"
fi
installed=$("$prefix/bin/manualqa" --version) || die "installed, but $prefix/bin/manualqa --version failed"

# 4. The multilingual companion embedder, where the bundle carries one: under the venv, where the default
# embedding.companion = "auto" finds it (gateway.companion_folder.bundled_companion), replaced whole (never half).
companion="none in this bundle (the gateway searches with the built-in English embedder alone)"
if [ -d "$bundle/embedders/multilingual-e5-small-int8" ]; then
    share=$prefix/share/manualqa/embedders
    mkdir -p "$share"
    rm -rf "$share/multilingual-e5-small-int8.new"
    cp -r "$bundle/embedders/multilingual-e5-small-int8" "$share/multilingual-e5-small-int8.new"
    rm -rf "$share/multilingual-e5-small-int8"
    mv "$share/multilingual-e5-small-int8.new" "$share/multilingual-e5-small-int8"
    companion="multilingual-e5-small-int8 in $share (embedding.companion = \"auto\")"
fi

cat <<EOF
installed: $installed in $prefix ($((SECONDS - start)) s)
e5:        $companion
next:
  $prefix/bin/manualqa ingest /path/to/manuals           # builds the index (data in \$MANUALQA_DATA, default ./data)
  $prefix/bin/manualqa serve --host 0.0.0.0 --port 8080  # technician page, admin page, JSON API
  sudo $prefix/bin/manualqa install-service               # as a systemd service (docs/operations.md, "Running as a service")
EOF
