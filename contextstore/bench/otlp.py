"""OTLP end to end on the production layout (PostgreSQL, gunicorn from project/gunicorn.py, a
Celery worker on CELERY_BROKER_URL), beside the plain API storing the same number of events, in
one run, per worker count:

    python manage.py bench_otlp --derive-workers 1,2,4
    python manage.py bench_otlp --before /path/to/an/older/checkout     # its code first, same run
    python manage.py bench_otlp --url http://127.0.0.1:8000 --token cs_...  # a running server

The workload is what instrumented chat clients send (issue 49): `--traces` traces, each an
`invoke_agent` root and 10 chat spans whose input is the whole conversation so far (GenAI
conventions), each trace a conversation of its own, 40 traces (440 spans) an export, sent by 4
exporters. Per row: spans/s accepted (answered 200, kept with their outbox rows); events/s
derived (the thread events the spans became, from the first export until the outbox is empty);
then the API storing that many events in batches of 100 from 4 clients on the same server
(events/s); and the ratio derived ÷ API (target: at least 0.5). `--before ROOT` runs the same
rows first on the checkout at ROOT (its gunicorn and worker), so before and after share the
machine's load of the moment.
"""

import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from contextstore.bench.over_http import BODY, Http, bench_token, load, message, ok, start_server
from contextstore.models import Event, OtelPending

CALLS = 10  # chat spans a trace
TRACES_PER_EXPORT = 40
API_BATCH = 100
CLIENTS = 4


def _kv(key: str, value: str | int) -> KeyValue:
    any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
    return KeyValue(key=key, value=any_value)


def _messages(turns: list[tuple[str, str]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}
                       for role, text in turns])


def otlp_batch(tag: str, traces: int = TRACES_PER_EXPORT) -> bytes:
    """One export of `traces` conversations, each a trace of a root and CALLS chat spans, each
    span's input the whole conversation so far."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_kv("service.name", "bench-agent"))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "bench"
    start = time.time_ns()
    for t in range(traces):
        trace_id = uuid.uuid4().bytes
        root = uuid.uuid4().bytes[:8]
        scope_spans.spans.append(Span(
            trace_id=trace_id, span_id=root, name="invoke_agent bench", kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start, end_time_unix_nano=start + 10**9, attributes=[
                _kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "bench"),
                _kv("gen_ai.conversation.id", f"{tag}-{t}")]))
        turns: list[tuple[str, str]] = [("system", "You are a benchmark."), ("user", f"question {t}: {BODY}")]
        for k in range(CALLS):
            answer = f"answer {t}.{k}: {BODY}"
            scope_spans.spans.append(Span(
                trace_id=trace_id, span_id=uuid.uuid4().bytes[:8], parent_span_id=root,
                name="chat bench-model", kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=start + k * 10**6, end_time_unix_nano=start + k * 10**6 + 5 * 10**5,
                attributes=[_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "bench-model"),
                            _kv("gen_ai.input.messages", _messages(turns)),
                            _kv("gen_ai.output.messages", _messages([("assistant", answer)])),
                            _kv("gen_ai.usage.input_tokens", 60 * len(turns)),
                            _kv("gen_ai.usage.output_tokens", 60)]))
            turns += [("assistant", answer), ("user", f"question {t}.{k + 1}: {BODY}")]
    body: bytes = request.SerializeToString()
    return body


def _parallel(work: Callable[[int], None]) -> float:
    """CLIENTS threads running `work(client)` once each; the seconds they took together."""
    began = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began


def start_worker(stdout: OutputWrapper, concurrency: int, root: Path | None = None) -> subprocess.Popen:
    """A Celery worker on this database and broker (both queues), `concurrency` processes,
    serving this checkout or, with `root`, another one."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    if root is not None:
        env["PYTHONPATH"] = str(root)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "project", "worker", "--concurrency", str(concurrency),
         "--without-mingle", "--without-gossip", "--loglevel", "WARNING"],
        cwd=root or settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL)
    stdout.write(f"started a worker (pid {worker.pid}, concurrency {concurrency}, broker "
                 f"{settings.CELERY_BROKER_URL.split('@')[-1]})")
    return worker


def drained(timeout: float) -> bool:
    """Wait until the derivation outbox is empty (every export derived)."""
    deadline = time.monotonic() + timeout
    while OtelPending.objects.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class OtlpBench:
    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, url: str | None, token: str | None, workers: int | None, traces: int,
            derive_workers: list[int], before: Path | None = None) -> None:
        """With `url`, a server (and its worker) already running on this database: one row."""
        token = token or bench_token("bench_otlp")
        self.stdout.write(f"database {settings.DATABASES['default']['ENGINE']}, {os.cpu_count()} CPUs, "
                          f"load average {load()}; {traces} traces of {CALLS} chat calls "
                          f"({traces * (CALLS + 1)} spans)")
        self.stdout.write(f"{'code':<8}{'workers':>8}{'accepted spans/s':>18}{'derived events/s':>18}"
                          f"{'events':>8}{'API events/s':>14}{'ratio':>7}")
        if url is not None:
            self.row("running", "?", url.rstrip("/"), token, traces)
            return
        for label, root in ([("before", before)] if before else []) + [("after", None)]:
            for n in derive_workers:
                server, base = start_server(OutputWrapper(io.StringIO()), workers, root=root)
                worker = start_worker(OutputWrapper(io.StringIO()), n, root)
                try:
                    self.row(label, str(n), base, token, traces)
                finally:
                    for process in (server, worker):
                        process.terminate()
                        process.wait(timeout=60)

    def row(self, label: str, workers: str, url: str, token: str, traces: int) -> None:
        tag = uuid.uuid4().hex[:8]
        auth = {"Authorization": f"Bearer {token}"}
        otlp = [Http(f"{url}/otlp/", {**auth, "Content-Type": "application/x-protobuf"})
                for _ in range(CLIENTS)]
        api = [Http(f"{url}/api/v1/", {**auth, "Content-Type": "application/json"}) for _ in range(CLIENTS)]
        try:
            for i in range(CLIENTS):  # warm: connections, the worker's first pass
                ok(otlp[i].post("v1/traces", otlp_batch(f"{tag}-warm-{i}", 2)))
            if not drained(180):
                raise CommandError("the warm-up exports were not derived in 180 s: is a worker running?")
            exports = max(1, traces // TRACES_PER_EXPORT)
            bodies = [otlp_batch(f"{tag}-{n}") for n in range(exports)]  # built before the clock
            spans = exports * TRACES_PER_EXPORT * (CALLS + 1)
            events_before = Event.objects.count()

            def export(i: int) -> None:
                for body in bodies[i::CLIENTS]:
                    ok(otlp[i].post("v1/traces", body))

            began = time.perf_counter()
            accepted = spans / _parallel(export)
            if not drained(1800):
                raise CommandError("the exports were not derived within 1800 s")
            took = time.perf_counter() - began
            made = Event.objects.count() - events_before
            derived = made / took

            threads = [ok(api[i].post("threads/ensure/", {"session_key": f"bench-otlp-{tag}-{i}",
                                                          "name": "main"})).json()["id"]
                       for i in range(CLIENTS)]
            per_client = -(-made // CLIENTS)

            def append(i: int) -> None:
                for start in range(0, per_client, API_BATCH):
                    body = {"events": [message(start + k, f"{tag}-{i}")
                                       for k in range(min(API_BATCH, per_client - start))]}
                    ok(api[i].post(f"threads/{threads[i]}/events/", body))

            api_rate = per_client * CLIENTS / _parallel(append)
            ratio = derived / api_rate if api_rate else 0.0
            self.stdout.write(f"{label:<8}{workers:>8}{accepted:>18,.0f}{derived:>18,.0f}{made:>8,}"
                              f"{api_rate:>14,.0f}{ratio:>7.2f}{'' if ratio >= 0.5 else '  (target 0.50)'}")
            self.stdout.flush()
        finally:
            for http in api + otlp:
                http.pool.close()
