"""Prometheus text exposition, kept in-process (no client library needed)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from gateway.answer_fields import OUTCOMES, Outcome

TTFT_BUCKETS_MS = (50, 100, 250, 500, 1000, 2500, 5000, 10000)
TPS_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def lines(self, name: str) -> list[str]:
        out = [f"# TYPE {name} histogram"]
        out += [f'{name}_bucket{{le="{b}"}} {c}' for b, c in zip(self.buckets, self.counts, strict=True)]
        out += [f'{name}_bucket{{le="+Inf"}} {self.total}', f"{name}_sum {self.sum:.3f}",
                f"{name}_count {self.total}"]
        return out


class Metrics:
    def __init__(self, queue_depth: Callable[[], int]) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.answers: Counter[str] = Counter()
        self.ttft = Histogram(TTFT_BUCKETS_MS)
        self.tps = Histogram(TPS_BUCKETS)
        self.queue_depth = queue_depth

    def request(self, method: str, route: str, status: int) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1

    def answer(self, outcome: Outcome, ttft_ms: float | None, tps: float | None) -> None:
        with self._lock:
            self.answers[outcome] += 1
            if ttft_ms is not None:
                self.ttft.observe(ttft_ms)
            if tps:
                self.tps.observe(tps)

    def outcome_counts(self) -> dict[str, int]:
        """Answers per outcome since this process started (the admin page's status panel)."""
        with self._lock:
            return {outcome: self.answers[outcome] for outcome in OUTCOMES}

    def render(self) -> str:
        with self._lock:
            lines = ["# TYPE manualqa_http_requests_total counter"]
            for (method, route, status), n in sorted(self.requests.items()):
                lines.append(f'manualqa_http_requests_total{{method="{method}",route="{route}",'
                             f'status="{status}"}} {n}')
            lines.append("# TYPE manualqa_answers_total counter")
            for outcome in OUTCOMES:
                lines.append(f'manualqa_answers_total{{outcome="{outcome}"}} {self.answers[outcome]}')
            lines += ["# TYPE manualqa_queue_depth gauge", f"manualqa_queue_depth {self.queue_depth()}"]
            lines += self.ttft.lines("manualqa_ttft_ms")
            lines += self.tps.lines("manualqa_decode_tokens_per_second")
        return "\n".join(lines) + "\n"


def counting_middleware(metrics: Metrics) -> Callable[[ASGIApp], ASGIApp]:
    """ASGI middleware counting requests by method, route template and status."""

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            status = [500]

            async def send_wrapper(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status[0] = message["status"]
                await send(message)

            try:
                await app(scope, receive, send_wrapper)
            finally:
                route = scope.get("path_template") or "unmatched"
                metrics.request(scope.get("method", "GET"), route, status[0])

        return middleware

    return factory
