"""How a parse worker (python -m ingest.pdf) keeps itself inside its limits and never outlives
its parent: an address-space cap, a wall-clock cap it enforces itself, and a watch on its parent.

They live in the worker because the parent cannot always enforce them: a parent killed with -9
leaves its child running unless the child notices.
"""

from __future__ import annotations

import ctypes
import math
import os
import select
import signal
import sys
import threading

ORPHANED_EXIT = 3  # exit status of a worker that found its parent gone (nobody is left to read it)
_WATCH_INTERVAL_S = 0.25
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def limit_memory(memory_mb: int) -> None:
    """Cap the address space, so a decompression bomb ends in MemoryError (reported) instead of
    in the kernel's OOM killer (which might pick another process)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: only the wall-clock limit applies
        return
    cap = int(memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def die_with_parent(parent_pid: int, lifeline_fd: int | None) -> None:
    """End this worker within ~0.25 s of its parent's death, however the parent died.

    Three independent signs, because each alone has a gap: the lifeline pipe (its write end lives
    only in the parent, so EOF means the parent is gone), the parent pid (re-parenting changes
    getppid()), and PR_SET_PDEATHSIG, which needs no Python thread to run but fires when the
    parent's forking *thread* ends (the server forks from pool threads), so it is never relied on
    alone. The watch runs in a daemon thread so a parse in progress does not delay it.
    """
    _kill_on_parent_death()
    if os.getppid() != parent_pid:  # the parent died before we could watch it
        os._exit(ORPHANED_EXIT)

    def watch() -> None:
        while True:
            if lifeline_fd is None:
                threading.Event().wait(_WATCH_INTERVAL_S)
            else:
                readable, _, _ = select.select([lifeline_fd], [], [], _WATCH_INTERVAL_S)
                if readable and not os.read(lifeline_fd, 1):
                    os._exit(ORPHANED_EXIT)
            if os.getppid() != parent_pid:
                os._exit(ORPHANED_EXIT)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _kill_on_parent_death() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) where the platform has it; a no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def limit_time(timeout_s: float) -> None:
    """Stop this worker after timeout_s of wall-clock time even if its parent cannot kill it.

    SIGALRM (not caught here, so it terminates the process) at the parent's own limit; an
    RLIMIT_CPU hard cap just above it as a backstop that cannot be caught or ignored.
    """
    if timeout_s <= 0:
        return
    seconds = max(1, math.ceil(timeout_s))
    if hasattr(signal, "alarm"):
        signal.alarm(seconds)
    try:
        import resource
    except ImportError:
        return
    cap = seconds + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > cap:
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap))
