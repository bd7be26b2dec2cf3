"""Server memory under hostile request bodies: two source trees side by side in one run.

For each tree (its own code, its own data directory; see bench/experiments/load.py's Tree) the server is
started, given 20 s to settle, and its idle RSS read from /proc. Then, one scenario at a time,
with the peak (VmHWM) reset before each through /proc/PID/clear_refs:
  chunked_json   four concurrent 100 MB chunked JSON bodies (2 x /api/v1/search, /admin/login,
                 /api/v1/ask) — none of them has a Content-Length to refuse early;
  upload_190     a 190 MB chunked multipart upload (admin key) of a file in field `data`;
  field_190      a 190 MB multipart part without a file name (a plain form field).
Reported: the peak RSS over idle in MB, the statuses, and how many MB the client had sent when
the answer came (a limit enforced while streaming answers long before 100 MB).

    python -m bench.experiments.body_memory --before /tmp/mqa-before --after .

Writes docs/bench/experiments/body_memory.md. Needs
root or the server's own user (clear_refs). Loopback only, every loop bounded.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.experiments.load import Tree
from bench.harness import proc_mib, write_section

MB = 1024 * 1024
SCENARIOS = ("chunked_json", "upload_190", "field_190")


def send_chunked(port: int, path: str, total: int, headers: str = "", head: bytes = b"",
                 tail: bytes = b"") -> tuple[int | None, float]:
    """POST a chunked body of about `total` bytes; (status, MB sent when the answer came)."""
    block = b"1," * (128 * 1024)
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n{headers}\r\n"
                  .encode())
        try:
            for piece in (head, *([block] * (total // len(block))), tail):
                if piece:
                    s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    sent += len(piece)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered early and closed
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
    return (int(data.split()[1]) if data.startswith(b"HTTP/") else None), round(sent / MB, 1)


def multipart_parts(with_filename: bool) -> tuple[str, bytes, bytes]:
    boundary = "benchboundary7MA4YWxkTrZu0gW"
    disposition = 'form-data; name="data"; filename="big.pdf"' if with_filename else 'form-data; name="data"'
    head = (f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: application/pdf\r\n\r\n"
            "%PDF-1.4\n").encode()
    return f"Content-Type: multipart/form-data; boundary={boundary}\r\n", head, f"\r\n--{boundary}--\r\n".encode()


def scenario(tree: Tree, port: int, name: str, key: str) -> dict[str, object]:
    pid = tree.proc.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    base = proc_mib(pid).get("VmRSS", 0.0)
    json_headers = "Content-Type: application/json\r\n"
    if name == "chunked_json":
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda p: send_chunked(port, p, 100 * MB, json_headers),
                                    ["/api/v1/search", "/api/v1/search", "/admin/login", "/api/v1/ask"]))
    else:
        ctype, head, tail = multipart_parts(with_filename=name == "upload_190")
        results = [send_chunked(port, "/api/v1/manuals", 190 * MB, ctype + f"Authorization: Bearer {key}\r\n",
                                head, tail)]
    time.sleep(1.0)
    peak = proc_mib(pid).get("VmHWM", 0.0)
    return {"peak_over_idle_mb": round(peak - base, 1), "statuses": [r[0] for r in results],
            "sent_mb": [r[1] for r in results], "alive": tree.alive()}


def run_tree(tree: Tree) -> dict[str, object]:
    tree.check_code()
    tree.ingest(1200)
    key = subprocess.run([sys.executable, "-m", "gateway", "keys", "create", "bench", "--role", "admin"],
                         cwd=tree.path, env=tree.env, capture_output=True, text=True, timeout=300).stdout.strip()
    try:
        tree.start(300)
        time.sleep(20)  # warm-up (index, embedder, model) settles before idle is read
        port = int(tree.url.rsplit(":", 1)[1])
        out: dict[str, object] = {"idle_mb": proc_mib(tree.proc.pid).get("VmRSS")}
        for name in SCENARIOS:
            out[name] = scenario(tree, port, name, key)
        return out
    finally:
        tree.stop()


def render(trees: dict[str, Tree], results: dict[str, dict]) -> str:
    rows = ["| scenario | before: peak over idle | after: peak over idle | before: status, MB sent "
            "| after: status, MB sent |", "|---|---:|---:|---|---|"]
    for name in SCENARIOS:
        b, a = results["before"][name], results["after"][name]
        rows.append(f"| {name} | {b['peak_over_idle_mb']} MB | {a['peak_over_idle_mb']} MB | "
                    f"{b['statuses']}, {b['sent_mb']} | {a['statuses']}, {a['sent_mb']} |")
    revs = ", ".join(f"{side} {t.revision}" for side, t in trees.items())
    idle = ", ".join(f"{side} {results[side]['idle_mb']:.0f} MB" for side in trees)
    table = "\n".join(rows)
    return (f"# Server memory under hostile request bodies\n\nPeak RSS over idle while the server receives each "
            f"body, one scenario at a time; trees: {revs}. Idle RSS: {idle}. Goal: under 100 MB. Status `None`: "
            f"the server closed the connection after answering (or before the client read it).\n\n{table}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mqa-bodymem-") as tmp:
        trees = {side: Tree(side, path, Path(tmp)) for side, path in (("before", args.before), ("after", args.after))}
        results = {side: run_tree(tree) for side, tree in trees.items()}
    doc = render(trees, results)
    write_section(__spec__.name, doc, argv=argv)
    print(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
