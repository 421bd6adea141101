"""OTLP ingest throughput over HTTP on loopback, beside the plain API's batch append measured
in the same run on the same server and database.

    python manage.py bench_otlp                      # starts gunicorn on this database
    python manage.py bench_otlp --url http://127.0.0.1:8000 --token cs_...

Each of 4 exporters posts 512-span batches (protobuf, as the OTLP/HTTP exporters send them):
64 traces of 8 spans, an `invoke_agent` root naming its conversation (8 traces each, as an
agent's turns) and 7 chat spans whose input repeats the turn so far (GenAI conventions).
Each of 4 API clients posts 512 events a request. Exports are derived by a Celery worker (one
started beside gunicorn here, `--derive-workers` processes, on CELERY_BROKER_URL) off the
request's path. Printed: events/s of the API; spans/s accepted (answered 200, kept with their
outbox rows); spans/s derived (from the first export until the outbox is empty, so it counts
the worker's backlog); the thread events the spans became, and the ratios (target: OTLP
spans/s at least half the API's events/s).
"""

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from contextstore.bench.over_http import BODY, Http, bench_token, load, message, ok, start_server
from contextstore.models import Event, OtelPending

BATCH = 512
SPANS_PER_TRACE = 8
TRACES_PER_SESSION = 8
CLIENTS = 4


def _kv(key: str, value: str | int) -> KeyValue:
    any_value = AnyValue(int_value=value) if isinstance(value, int) else AnyValue(string_value=value)
    return KeyValue(key=key, value=any_value)


def _messages(turns: list[tuple[str, str]]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}
                       for role, text in turns])


def otlp_batch(tag: str) -> bytes:
    """One export of BATCH spans: BATCH / SPANS_PER_TRACE conversations, each a trace."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_kv("service.name", "bench-agent"))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "bench"
    start = time.time_ns()
    for t in range(BATCH // SPANS_PER_TRACE):
        trace_id = uuid.uuid4().bytes
        root = uuid.uuid4().bytes[:8]
        scope_spans.spans.append(Span(
            trace_id=trace_id, span_id=root, name="invoke_agent bench", kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start, end_time_unix_nano=start + 10**9, attributes=[
                _kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "bench"),
                _kv("gen_ai.conversation.id", f"{tag}-{t // TRACES_PER_SESSION}")]))
        turns: list[tuple[str, str]] = [("system", "You are a benchmark.")]
        for k in range(SPANS_PER_TRACE - 1):
            turns.append(("user", f"question {t}.{k}: {BODY}"))
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
            turns.append(("assistant", answer))
    body: bytes = request.SerializeToString()
    return body


def _rate(work: Callable[[int], int], seconds: float) -> tuple[int, float]:
    """Items done by CLIENTS threads running `work(client)` (items per call) until `seconds`
    have passed, and the seconds they took."""
    done = [0] * CLIENTS
    deadline = time.perf_counter() + seconds

    def loop(i: int) -> None:
        while time.perf_counter() < deadline:
            done[i] += work(i)

    began = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done), time.perf_counter() - began


def start_worker(stdout: OutputWrapper, concurrency: int) -> subprocess.Popen:
    """A Celery worker on this database and broker, for the derivation passes the exports queue."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "project", "worker", "--concurrency", str(concurrency),
         "--without-mingle", "--without-gossip", "--loglevel", "WARNING"],
        cwd=settings.BASE_DIR, env={**os.environ, "LOG_LEVEL": "WARNING"}, stdout=subprocess.DEVNULL)
    stdout.write(f"started a worker (pid {worker.pid}, concurrency {concurrency}, broker "
                 f"{settings.CELERY_BROKER_URL.split('@')[-1]})")
    return worker


def drained(timeout: float) -> bool:
    """Wait until the derivation outbox is empty (every export derived)."""
    deadline = time.monotonic() + timeout
    while OtelPending.objects.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class OtlpBench:
    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, url: str | None, token: str | None, workers: int | None, seconds: float,
            derive_workers: int = 1) -> None:
        """With `url`, a server (and its worker) already running on this database."""
        processes = []
        if token is None:
            token = bench_token("bench_otlp")
        try:
            if url is None:
                server, url = start_server(self.stdout, workers)
                processes = [server, start_worker(self.stdout, derive_workers)]
            self.measure(url.rstrip("/"), token, seconds)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)

    def measure(self, url: str, token: str, seconds: float) -> None:
        tag = uuid.uuid4().hex[:8]
        auth = {"Authorization": f"Bearer {token}"}
        self.stdout.write(f"server {url}, database {settings.DATABASES['default']['ENGINE']}, "
                          f"{os.cpu_count()} CPUs, load average {load()}")
        api = [Http(f"{url}/api/v1/", {**auth, "Content-Type": "application/json"}) for _ in range(CLIENTS)]
        otlp = [Http(f"{url}/otlp/", {**auth, "Content-Type": "application/x-protobuf"})
                for _ in range(CLIENTS)]
        threads = [ok(api[i].post("threads/ensure/", {"session_key": f"bench-otlp-{tag}-{i}",
                                                      "name": "main"})).json()["id"] for i in range(CLIENTS)]
        sent = [0] * CLIENTS

        def api_batch(i: int) -> int:
            body = {"events": [message(sent[i] + k, f"{tag}-{i}") for k in range(BATCH)]}
            sent[i] += BATCH
            ok(api[i].post(f"threads/{threads[i]}/events/", body))
            return BATCH

        bodies = [otlp_batch(f"{tag}-warm-{i}") for i in range(CLIENTS)]
        for i in range(CLIENTS):  # warm: connections, the first trace's sessions, the worker
            ok(otlp[i].post("v1/traces", bodies[i]))
        if not drained(120):
            raise CommandError("the warm-up exports were not derived in 120 s: is a worker running?")
        # Every batch new (a re-sent one costs less: its spans are known): built before the
        # clock starts where the run's length allows, else on the way.
        prepared = [[otlp_batch(f"{tag}-{i}-{n}") for n in range(max(2, int(seconds * 3)))]
                    for i in range(CLIENTS)]
        made_on_the_way = [0] * CLIENTS

        def otlp_export(i: int) -> int:
            if prepared[i]:
                body = prepared[i].pop()
            else:
                made_on_the_way[i] += 1
                body = otlp_batch(f"{tag}-{i}-late-{made_on_the_way[i]}")
            ok(otlp[i].post("v1/traces", body))
            return BATCH

        events, took = _rate(api_batch, seconds)
        api_rate = events / took
        self.stdout.write(f"{'plain API batch append (512/request), 4 clients':<56} "
                          f"{api_rate:>10,.0f} events/s")
        events_before = Event.objects.count()
        began = time.perf_counter()
        spans, took = _rate(otlp_export, seconds)
        accepted = spans / took
        self.stdout.write(f"{'OTLP export accepted (512 spans/request, protobuf), 4 exporters':<56} "
                          f"{accepted:>10,.0f} spans/s")
        if not drained(600):
            raise CommandError("the exports were not derived within 600 s")
        derived = spans / (time.perf_counter() - began)
        self.stdout.write(f"{'OTLP export derived (until the outbox is empty)':<56} "
                          f"{derived:>10,.0f} spans/s")
        made = Event.objects.count() - events_before
        self.stdout.write(f"{'  thread events derived from those spans':<56} {made:>10,} events")
        for what, rate in (("accepted", accepted), ("derived", derived)):
            ratio = rate / api_rate if api_rate else 0.0
            self.stdout.write(f"{f'OTLP spans/s {what} ÷ API events/s':<56} {ratio:>10.2f}   target >= 0.50"
                              f"{'  ok' if ratio >= 0.5 else '  MISSED'}")
        for http in api + otlp:
            http.pool.close()
