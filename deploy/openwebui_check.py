"""Open WebUI against a real manualqa gateway, driven in chromium like a person (issue 48).

Run by deploy/openwebui_check.sh, which installs Open WebUI in its own venv first; this file needs
the repository's venv (playwright) and the path of Open WebUI's `open-webui` command.

Why it exists: "Open WebUI works with its defaults" is only true if someone tried it. The check starts
a gateway over sample_manuals (a temporary data directory, a reader key), starts Open WebUI offline
with that gateway as its OpenAI connection and every other setting at its default (streaming on,
title / tags / follow-up generation on, its built-in tools attached), signs up its first admin in
chromium, picks the model `manualqa`, asks one question, and checks:

  - the streamed reply shown on the page holds the answer and a "Sources:" footer naming a page;
  - the gateway's answer log holds exactly one searched question for it (Open WebUI's housekeeping
    requests were answered without a search).

Open WebUI reaches the gateway through a small recording proxy in this process (transparent: it
forwards every byte and streams SSE through unbuffered), so that the report can say what Open WebUI
sent and what the gateway answered to each request (requests.jsonl in the results directory).

Prints PASS / FAIL lines; exits 1 on a failure; both servers are stopped on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling module
from recording_proxy import Recorder, start_proxy  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
QUESTION = "What baud rate does the piston board debug console use?"
EXPECT = "115200"

failures: list[str] = []


def say(msg: str) -> None:
    print(msg, flush=True)


def check(ok: bool, what: str, detail: str = "") -> bool:
    say(f"{'PASS' if ok else 'FAIL'} {what}" + (f": {detail}" if detail else ""))
    if not ok:
        failures.append(what)
    return ok


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout_s: float, proc: subprocess.Popen[bytes], what: str) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it answered {url}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except Exception:
            pass
        time.sleep(1.0)
    raise RuntimeError(f"{what} did not answer {url} within {timeout_s:.0f} s")


# ---------------------------------------------------------------- the recording proxy

# ---------------------------------------------------------------- processes

class Procs:
    def __init__(self, pidfile: Path) -> None:
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.pidfile = pidfile

    def start(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
        f = log.open("ab")
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((name, p))
        with self.pidfile.open("a") as pf:
            pf.write(f"{p.pid}\n")
        return p

    def stop_all(self) -> None:
        for name, p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
            say(f"stopped {name} (pid {p.pid}, exit {p.returncode})")


def gateway_cmd(tree: Path, *args: str) -> list[str]:
    """`manualqa ARGS` with the repository's venv and the code of `tree` (PYTHONPATH=tree, cwd=tree)."""
    return [str(REPO / ".venv/bin/python"), "-m", "gateway", *args]


def manualqa(args: list[str], env: dict[str, str], tree: Path) -> str:
    r = subprocess.run(gateway_cmd(tree, *args), env=env, cwd=tree, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"manualqa {' '.join(args)} failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


# ---------------------------------------------------------------- the browser

def drive(url: str, results: Path, chromium: str, timeout_s: float) -> str:
    from playwright.sync_api import TimeoutError as PWTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(60_000)
        try:
            return _drive(page, url, results, timeout_s, PWTimeout)
        finally:
            try:
                (results / "page.html").write_text(page.content(), encoding="utf-8")
                page.screenshot(path=str(results / "openwebui.png"), full_page=False)
                say(f"screenshot: {results / 'openwebui.png'}")
            except Exception as e:
                say(f"(no screenshot: {e})")
            browser.close()


def _dismiss(page: Any) -> None:
    """Close first-run notices ("What's new", release notes) if one is shown."""
    for label in ("Okay, Let's Go!", "Okay, Let's Go", "Got it", "Close"):
        btn = page.get_by_role("button", name=label)
        try:
            if btn.count() and btn.first.is_visible():
                btn.first.click()
                page.wait_for_timeout(500)
        except Exception:
            pass


def _drive(page: Any, url: str, results: Path, timeout_s: float, PWTimeout: type) -> str:
    page.goto(url + "/")
    page.wait_for_load_state("networkidle")
    # First run: an onboarding splash ("Get started"), then the sign-up form of the first (admin) account.
    for _ in range(60):
        if page.locator("#chat-input").count() or page.locator("input[type=password]").count():
            break
        start = page.get_by_role("button", name=re.compile("get started", re.I))
        if start.count() and start.first.is_visible():
            start.first.click()
        page.wait_for_timeout(1000)
    if page.locator("input[type=password]").count() and not page.locator("#chat-input").count():
        say("sign-up: creating the first (admin) account")
        name = page.locator("input[autocomplete=name], input[name=name]")
        if name.count():
            name.first.fill("Check Admin")
        page.locator("input[type=email]").first.fill("admin@example.com")
        for pw_input in page.locator("input[type=password]").all():
            pw_input.fill("check-password-1")
        page.screenshot(path=str(results / "signup.png"))
        page.locator("button[type=submit]").first.click()
    page.locator("#chat-input").wait_for(state="visible", timeout=120_000)
    page.wait_for_timeout(1500)
    _dismiss(page)

    # Pick the model manualqa: open the model selector (it shows the current model, or "Select a model")
    # and choose manualqa in its list.
    selector = page.locator("button").filter(has_text=re.compile(r"^\s*(manualqa|Select a model)\s*$", re.I)).first
    selector.click()
    page.wait_for_timeout(1000)
    (results / "model-menu.html").write_text(page.content(), encoding="utf-8")
    menu = page.locator("[role=menu], [role=listbox], [role=dialog], [data-melt-dropdown-menu]")
    item = menu.get_by_text("manualqa", exact=True)
    if item.count():
        item.first.click()
    else:
        say("(model list: no item 'manualqa' found in a menu; keeping the shown model)")
        page.keyboard.press("Escape")
    page.wait_for_timeout(800)
    shown = page.locator("button").filter(has_text=re.compile(r"^\s*(manualqa|Select a model)\s*$", re.I))
    shown_text = shown.first.inner_text().strip() if shown.count() else ""
    check(shown_text == "manualqa", "model manualqa picked", shown_text[:80])

    box = page.locator("#chat-input")
    box.click()
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    say(f"asked: {QUESTION}")

    # The assistant's reply: wait until it holds "Sources:" and generation has ended (Open WebUI shows the
    # message's action bar, Regenerate included, only then), or an error is shown instead.
    t0 = time.monotonic()
    text = ""
    while time.monotonic() - t0 < timeout_s:
        msgs = page.locator("#response-content-container")
        text = msgs.last.inner_text() if msgs.count() else ""
        done = page.locator("button[aria-label='Regenerate']").count() > 0
        if "Sources:" in text and done:
            break
        err = page.locator(".text-red-500, [class*='error']").filter(has_text=re.compile(".{8,}"))
        if done and "Sources:" not in text or (not text and err.count() and err.first.is_visible()):
            text = text or "[error shown] " + err.first.inner_text()
            break
        page.wait_for_timeout(1000)
    page.wait_for_timeout(3000)  # let the page settle (title, follow-ups) before the screenshot
    msgs = page.locator("#response-content-container")
    if msgs.count():
        text = msgs.last.inner_text()
    (results / "reply.txt").write_text(text, encoding="utf-8")
    return text


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--open-webui", required=True, help="path of Open WebUI's `open-webui` command")
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--start-timeout", type=float, default=900.0, help="seconds Open WebUI may take to start")
    ap.add_argument("--answer-timeout", type=float, default=300.0)
    ap.add_argument("--tree", type=Path, default=REPO, help="the gateway's source tree (default: this checkout)")
    ap.add_argument("--revision", default="", help="what --tree holds, for the report (e.g. a commit)")
    ap.add_argument("--keep-work", action="store_true")
    args = ap.parse_args()
    results: Path = args.results
    results.mkdir(parents=True, exist_ok=True)
    for old in ("requests.jsonl", "reply.txt", "openwebui.png", "signup.png", "page.html", "model-menu.html",
                "answer_log.json", "gateway.log", "openwebui.log"):
        (results / old).unlink(missing_ok=True)
    work = Path(tempfile.mkdtemp(prefix="owui-check."))
    procs = Procs(Path(os.environ.get("OWUI_PIDFILE", work / "pids")))

    def on_signal(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        return run(args, results, work, procs)
    except Exception as e:
        check(False, "the check ran to its end", f"{type(e).__name__}: {e}")
        return 1
    finally:
        procs.stop_all()
        for log in ("gateway.log", "openwebui.log"):
            if (work / log).exists():
                shutil.copy(work / log, results / log)
        if args.keep_work:
            say(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, results: Path, work: Path, procs: Procs) -> int:
    # 1. The gateway: the sample manuals ingested into a temporary data directory, a reader key.
    genv = {k: v for k, v in os.environ.items() if not k.startswith("MANUALQA_")}
    tree: Path = args.tree.resolve()
    genv.update(MANUALQA_DATA=str(work / "data"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(tree))
    say(f"gateway code: {tree} ({args.revision or 'working tree'})")
    t0 = time.monotonic()
    manualqa(["ingest", "sample_manuals"], genv, tree)
    say(f"ingested sample_manuals into {work / 'data'} ({time.monotonic() - t0:.0f} s)")
    key = json.loads(manualqa(["keys", "create", "openwebui-check", "--role", "reader", "--json"], genv, tree))["key"]
    gport = free_port()
    gw = procs.start("gateway", gateway_cmd(tree, "serve", "--host", "127.0.0.1", "--port", str(gport)), genv, tree,
                     work / "gateway.log")
    s = wait_http(f"http://127.0.0.1:{gport}/api/v1/health", 300, gw, "the gateway")
    say(f"gateway ready on 127.0.0.1:{gport} ({s:.0f} s)")

    recorder = Recorder(results / "requests.jsonl")
    proxy = start_proxy(gport, recorder)
    pport = proxy.server_address[1]

    # 2. Open WebUI, offline, with the gateway as its one OpenAI connection; everything else its default.
    oport = free_port()
    oenv = dict(os.environ)
    for k in list(oenv):
        if k.startswith(("MANUALQA_", "VIRTUAL_ENV", "PYTHON")):
            oenv.pop(k)
    venv_bin = str(Path(args.open_webui).resolve().parent)
    oenv.update(
        PATH=venv_bin + os.pathsep + oenv.get("PATH", ""),
        DATA_DIR=str(work / "owui-data"),
        OFFLINE_MODE="true", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
        ENABLE_OLLAMA_API="false",
        OPENAI_API_BASE_URL=f"http://127.0.0.1:{pport}/v1",
        OPENAI_API_KEY=key,
        WEBUI_SECRET_KEY="openwebui-check-" + key[-8:],
        PORT=str(oport), HOST="127.0.0.1",
    )
    (work / "owui-data").mkdir()
    ow = procs.start("open-webui", [args.open_webui, "serve", "--host", "127.0.0.1", "--port", str(oport)],
                     oenv, work, work / "openwebui.log")
    say(f"starting Open WebUI on 127.0.0.1:{oport} (gateway through the recording proxy on :{pport})")
    s = wait_http(f"http://127.0.0.1:{oport}/health", args.start_timeout, ow, "Open WebUI")
    say(f"Open WebUI ready ({s:.0f} s)")

    # 3. chromium, like a person.
    reply = drive(f"http://127.0.0.1:{oport}", results, args.chromium, args.answer_timeout)
    say("reply shown on the page:\n  " + reply.replace("\n", "\n  "))
    body = reply.split("Sources:")[0]
    check(EXPECT in body, f"the reply's answer holds {EXPECT}", body.strip().replace("\n", " ")[:160])
    m = re.search(r"Sources:\s*(.*)", reply, re.S)
    sources = m.group(1).strip() if m else ""
    check(bool(re.search(r"p\.\s*\d+", sources)), "a Sources: footer names a manual page",
          sources.replace("\n", " | ")[:200])

    # 4. Housekeeping: wait for Open WebUI's background requests (title, tags, follow-ups) to reach the gateway.
    # (a question and its title, tags and follow-up requests: 4 chat completions; or 30 s without a new one).
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        chats = [r for r in recorder.rows if r["path"].endswith("/chat/completions")]
        last = max((r["t"] + r["s"] for r in chats), default=time.time())
        if (len(chats) >= 4 and time.time() - last > 5) or time.time() - last > 30:
            break
        time.sleep(2)

    say("requests Open WebUI sent to the gateway:")
    for r in recorder.rows:
        rq, rs = r["request"], r["response"]
        if r["path"].endswith("/chat/completions"):
            mq = rs.get("manualqa") or {}
            say(f"  {r['method']} {r['path']} stream={rq.get('stream')} tools={rq.get('n_tools')} "
                f"msgs={rq.get('n_messages')} user={rq.get('last_user', '')[:70]!r}")
            say(f"    -> {rs.get('status')} task={mq.get('task')} outcome={mq.get('outcome')} "
                f"answer_id={mq.get('answer_id')} content={str(rs.get('content'))[:110]!r}")
        else:
            say(f"  {r['method']} {r['path']} -> {rs.get('status')} {rs.get('models') or ''}")
    chats = [r for r in recorder.rows if r["path"].endswith("/chat/completions")]
    check(all(r["response"].get("status") == 200 for r in chats), "every chat completion answered 200",
          ", ".join(str(r["response"].get("status")) for r in chats))
    asked = [r for r in chats if QUESTION in (r["request"].get("last_user") or "")
             and not (r["request"].get("last_user") or "").lstrip().startswith("###")]
    check(len(asked) == 1 and asked[0]["request"].get("stream") is True and asked[0]["request"].get("n_tools", 0) > 0,
          "the question was sent once, streamed, with Open WebUI's tools attached",
          f"{len(asked)} sent; stream={asked[0]['request'].get('stream') if asked else None}, "
          f"tools={asked[0]['request'].get('n_tools') if asked else None}")
    if asked and EXPECT not in body:  # the page showed no answer: what did the gateway send?
        say("the gateway's reply to the question, as sent (SSE):\n  "
            + asked[0]["response"].get("raw", "")[:3000].replace("\n", "\n  "))
    tasks = [(r["response"].get("manualqa") or {}).get("task") for r in chats if r not in asked]
    check(len(tasks) >= 1 and all(tasks), "Open WebUI's housekeeping requests were answered as housekeeping",
          f"tasks={tasks}")

    # 5. The answer log: exactly one searched question, this one.
    rows = json.loads(manualqa(["log", "--json", "--limit", "100"], genv, tree))
    (results / "answer_log.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    qs = [(r.get("client"), r.get("outcome"), r.get("question")) for r in rows]
    check(len(rows) == 1 and rows[0].get("question") == QUESTION,
          "the answer log holds exactly one searched question, this one", json.dumps(qs, ensure_ascii=False)[:300])
    return 1 if failures else 0


if __name__ == "__main__":
    code = main()
    say(("FAIL" if code else "PASS") + f" Open WebUI check ({len(failures)} failure(s)"
        + (": " + "; ".join(failures) if failures else "") + ")")
    sys.exit(code)
