"""The comparison as one self-contained HTML file (inline CSS and SVG; readable offline)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from gateway.qa.compare import Comparison, Side
from gateway.qa.metrics import HIGHER_IS_BETTER, names
from gateway.qa.replay import IDENTITY

QUALITY = list(names("quality"))
LATENCY = ["retrieval_ms", "ttft_ms", "total_ms"]
BASE_COLOR, CAND_COLOR = "#5b6b7f", "#0b4fbd"

CSS = """body{font:15px/1.45 system-ui,sans-serif;margin:1.5rem;color:#111;max-width:75rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid #ccd;padding:.3rem .45rem;text-align:left;vertical-align:top;font-size:.92rem}
.pass{background:#0a6b2b;color:#fff;padding:.4rem .8rem;display:inline-block;border-radius:4px}
.fail{background:#a00;color:#fff;padding:.4rem .8rem;display:inline-block;border-radius:4px}
.worse{color:#a00;font-weight:600}.better{color:#0a6b2b;font-weight:600}
.legend span{display:inline-block;width:.9rem;height:.9rem;margin:0 .3rem 0 1rem;vertical-align:middle}
code{font-size:.85rem}td.ans{max-width:28rem;white-space:pre-wrap}"""


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return escape(str(v))


def _bars(cmp: Comparison) -> str:
    """Grouped horizontal bars, baseline vs candidate, for the 0..1 quality metrics."""
    rows = [m for m in QUALITY if cmp.deltas[m]["baseline"] is not None or cmp.deltas[m]["candidate"] is not None]
    width, label_w, bar_h = 720, 190, 12
    height = len(rows) * (2 * bar_h + 14) + 30
    parts = [f'<svg role="img" aria-label="quality metrics" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg" font-size="12">']
    scale = width - label_w - 60
    for i, m in enumerate(rows):
        y = 10 + i * (2 * bar_h + 14)
        parts.append(f'<text x="0" y="{y + bar_h + 4}">{escape(m)}</text>')
        d = cmp.deltas[m]
        for j, (value, color) in enumerate(((d["baseline"], BASE_COLOR), (d["candidate"], CAND_COLOR))):
            v = value or 0.0
            w = max(0.0, min(1.0, float(v))) * scale
            yy = y + j * bar_h
            parts.append(f'<rect x="{label_w}" y="{yy}" width="{w:.1f}" height="{bar_h - 2}" fill="{color}"/>')
            parts.append(f'<text x="{label_w + w + 4:.1f}" y="{yy + bar_h - 3}">{_fmt(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _boxes(cmp: Comparison) -> str:
    """Per latency kind, one box plot (p5-p25-p50-p75-p95) per run on a shared ms axis."""
    from gateway.qa.metrics import percentile

    out = []
    for kind in LATENCY:
        series = []
        for run, color in ((cmp.baseline, BASE_COLOR), (cmp.candidate, CAND_COLOR)):
            vals = [v for it in run["items"] if isinstance(v := it["timings"].get(kind), int | float)]
            series.append((run.get("label") or run["id"], color, vals))
        # the axis spans the largest p95 (whiskers end there): one slow outlier must not squash the boxes
        top = 1.15 * max(((percentile(v, 95) or 0.0) for _, _, v in series if v), default=0.0)
        if top <= 0:
            continue
        width, left, h = 720, 190, 26
        scale = (width - left - 140) / top  # room for the p50/p95 label right of the whisker
        parts = [f'<h3>{escape(kind)} (ms)</h3><svg role="img" aria-label="{escape(kind)} distribution" '
                 f'width="{width}" height="{len(series) * (h + 8) + 24}" xmlns="http://www.w3.org/2000/svg" '
                 f'font-size="12">']
        for i, (name, color, vals) in enumerate(series):
            y = 4 + i * (h + 8)
            parts.append(f'<text x="0" y="{y + h / 2 + 4}">{escape(str(name))[:26]}</text>')
            if not vals:
                continue
            p5, p25, p50, p75, p95 = (percentile(vals, q) or 0.0 for q in (5, 25, 50, 75, 95))
            def x(v: float, left: float = left, scale: float = scale) -> float:
                return left + v * scale
            parts.append(f'<line x1="{x(p5):.1f}" x2="{x(p95):.1f}" y1="{y + h / 2}" y2="{y + h / 2}" '
                         f'stroke="{color}" stroke-width="2"/>')
            parts.append(f'<rect x="{x(p25):.1f}" y="{y}" width="{max(1.0, x(p75) - x(p25)):.1f}" '
                         f'height="{h}" fill="{color}" fill-opacity=".35" stroke="{color}"/>')
            parts.append(f'<line x1="{x(p50):.1f}" x2="{x(p50):.1f}" y1="{y}" y2="{y + h}" stroke="#000" '
                         f'stroke-width="2"/>')
            parts.append(f'<text x="{x(p95) + 4:.1f}" y="{y + h / 2 + 4}">p50 {p50:.0f} · p95 {p95:.0f}</text>')
        parts.append(f'<text x="{left}" y="{len(series) * (h + 8) + 18}">0</text>'
                     f'<text x="{width - 60}" y="{len(series) * (h + 8) + 18}">{top:.0f} ms</text></svg>')
        out.append("".join(parts))
    return "".join(out) or "<p>No latency figures in these runs.</p>"


def _delta_class(name: str, delta: float | None) -> str:
    if not delta:
        return ""
    better = (delta > 0) == HIGHER_IS_BETTER[name]
    return "better" if better else "worse"


def _side_cell(side: Side) -> str:
    return (f"<td class=\"ans\"><strong>{escape(side['outcome'] or '')}</strong>\n"
            f"{escape(side['answer'] or '')}\n<code>{escape('; '.join(side['citations']))}</code></td>")


def deployment_keys(*deployments: Mapping[str, object]) -> list[str]:
    """The deployment rows: the identity first, in one order (gateway.qa.replay.IDENTITY), then the rest."""
    rest = sorted({k for d in deployments for k in d} - set(IDENTITY))
    return [*IDENTITY, *rest]


def render_report(cmp: Comparison) -> str:
    b, c = cmp.baseline, cmp.candidate
    verdict = ('<p class="pass">GATE PASSED</p>' if cmp.passed else
               '<p class="fail">GATE FAILED</p><ul>' + "".join(f"<li>{escape(v)}</li>" for v in cmp.violations)
               + "</ul>")
    dep_rows = "".join(
        f"<tr><th>{escape(k)}</th><td><code>{_fmt(b['deployment'].get(k))}</code></td>"
        f"<td><code>{_fmt(c['deployment'].get(k))}</code></td></tr>"
        for k in deployment_keys(b["deployment"], c["deployment"]))
    metric_rows = "".join(
        f"<tr><td>{escape(m)}</td><td>{_fmt(d['baseline'])}</td><td>{_fmt(d['candidate'])}</td>"
        f"<td class=\"{_delta_class(m, d['delta'])}\">{_fmt(d['delta'])}</td></tr>"
        for m, d in cmp.deltas.items())
    changed_rows = "".join(
        f"<tr><td><code>{escape(ch['question_id'])}</code><br>{escape(ch['question'])}<br>"
        f"<em>{escape(', '.join(ch['changes']))}</em></td>{_side_cell(ch['baseline'])}"
        f"{_side_cell(ch['candidate'])}</tr>" for ch in cmp.changed
    ) or '<tr><td colspan="3">No answer or citation changed.</td></tr>'
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>manualqa replay comparison</title>
<style>{CSS}</style></head><body>
<h1>Replay comparison: {escape(b.get('label') or b['id'])} → {escape(c.get('label') or c['id'])}</h1>
{verdict}
<h2>Deployments</h2><table><tr><th></th><th>baseline</th><th>candidate</th></tr>
<tr><th>run</th><td><code>{escape(b['id'])}</code> {escape(b['time'])}</td><td><code>{escape(c['id'])}</code>
 {escape(c['time'])}</td></tr>{dep_rows}</table>
<h2>Quality</h2><p class="legend"><span style="background:{BASE_COLOR}"></span>baseline
<span style="background:{CAND_COLOR}"></span>candidate</p>{_bars(cmp)}
<h2>Latency</h2>{_boxes(cmp)}
<h2>All metrics</h2><table><tr><th>metric</th><th>baseline</th><th>candidate</th><th>delta</th></tr>
{metric_rows}</table>
<h2>Changed answers ({len(cmp.changed)})</h2>
<table><tr><th>question</th><th>baseline</th><th>candidate</th></tr>{changed_rows}</table>
</body></html>"""
