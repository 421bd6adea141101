"""How long a quiet workspace's small trace waits while another workspace floods OTLP.

    python manage.py bench_otlp_fairness              # starts gunicorn and a worker here
    python manage.py bench_otlp_fairness --spans 50000 --url http://127.0.0.1:8000

Workspace `bench` exports `--spans` small spans (traces of 10: an `invoke_agent` root and 9
short chat spans, 500 spans an export, 2 exporters) as fast as the server takes them; once
they are all accepted, workspace `bench-quiet` exports one trace of two LLM calls. Printed:
the flood's backlog (outbox rows) when the quiet trace was sent, the seconds from its export's
answer until its two calls are readable (both LLMComplete events committed in its thread),
the backlog left at that moment, and (unless `--no-drain`) the seconds until the flood is
derived too; with `--no-drain` the rest of the flood stays in the outbox for the next worker.
"""

import os
import threading
import time
import uuid

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from contextstore.bench.otlp import _kv, _messages, start_worker
from contextstore.bench.over_http import Http, bench_token, load, ok, start_server
from contextstore.models import Event, OtelPending
from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure

SPANS_PER_TRACE = 10
EXPORT_SPANS = 500
EXPORTERS = 2


def _export(tag: str, traces: int, calls: int) -> bytes:
    """`traces` traces of one `invoke_agent` root and `calls` chat spans each."""
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_kv("service.name", "fairness-agent"))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "bench"
    start = time.time_ns()
    for t in range(traces):
        trace_id, root = uuid.uuid4().bytes, uuid.uuid4().bytes[:8]
        scope_spans.spans.append(Span(
            trace_id=trace_id, span_id=root, name="invoke_agent bench", kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=start, end_time_unix_nano=start + 10**9, attributes=[
                _kv("gen_ai.operation.name", "invoke_agent"),
                _kv("gen_ai.conversation.id", f"{tag}-{t}")]))
        turns = [("user", f"question {t}")]
        for k in range(calls):
            scope_spans.spans.append(Span(
                trace_id=trace_id, span_id=uuid.uuid4().bytes[:8], parent_span_id=root,
                name="chat bench-model", kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=start + k * 10**6, end_time_unix_nano=start + k * 10**6 + 10**5,
                attributes=[_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", "bench-model"),
                            _kv("gen_ai.input.messages", _messages(turns)),
                            _kv("gen_ai.output.messages", _messages([("assistant", f"answer {k}")]))]))
            turns += [("assistant", f"answer {k}"), ("user", f"more {k}")]
    body: bytes = request.SerializeToString()
    return body


class FairnessBench:
    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, url: str | None, spans: int, derive_workers: int, drain: bool = True) -> None:
        flood_token = bench_token("bench_otlp_fairness")
        quiet, _ = workspace_ensure(slug="bench-quiet", name="Benchmarks (quiet)")
        quiet_token = api_token_create(workspace=quiet, name="bench_otlp_fairness", scope="write",
                                       actor=Actor.system("bench_otlp_fairness"))[1]
        processes = []
        try:
            if url is None:
                server, url = start_server(self.stdout, None)
                processes = [server, start_worker(self.stdout, derive_workers)]
            self.measure(url.rstrip("/"), flood_token, quiet_token, quiet.pk, spans, drain)
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)

    def measure(self, url: str, flood_token: str, quiet_token: str, quiet_pk: int, spans: int,
                drain: bool) -> None:
        self.stdout.write(f"server {url}, database {settings.DATABASES['default']['ENGINE']}, broker "
                          f"{settings.CELERY_BROKER_URL.split('://')[0]}, {os.cpu_count()} CPUs, "
                          f"load average {load()}")
        tag = uuid.uuid4().hex[:8]
        exports = max(1, spans // EXPORT_SPANS)
        bodies = [_export(f"{tag}-{n}", EXPORT_SPANS // SPANS_PER_TRACE, SPANS_PER_TRACE - 1)
                  for n in range(exports)]
        began = time.perf_counter()

        def exporter(i: int) -> None:
            with Http(f"{url}/otlp/", {"Authorization": f"Bearer {flood_token}",
                                       "Content-Type": "application/x-protobuf"}) as http:
                for body in bodies[i::EXPORTERS]:
                    ok(http.post("v1/traces", body))

        threads = [threading.Thread(target=exporter, args=(i,)) for i in range(EXPORTERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        accepted = time.perf_counter() - began
        backlog = OtelPending.objects.exclude(workspace=quiet_pk).count()
        self.stdout.write(f"flood: {exports * EXPORT_SPANS:,} spans accepted in {accepted:.1f} s; "
                          f"{backlog:,} traces waiting for derivation")
        with Http(f"{url}/otlp/", {"Authorization": f"Bearer {quiet_token}",
                                   "Content-Type": "application/x-protobuf"}) as http:
            ok(http.post("v1/traces", _export(f"quiet-{tag}", 1, 2)))
        sent = time.perf_counter()
        calls = Event.objects.filter(thread__session__workspace=quiet_pk,
                                     thread__session__key=f"quiet-{tag}-0", type="LLMComplete")
        while calls.count() < 2:
            if time.perf_counter() - sent > 3600:
                raise CommandError("the quiet trace was not derived within an hour")
            time.sleep(0.05)
        waited = time.perf_counter() - sent
        left = OtelPending.objects.exclude(workspace=quiet_pk).count()
        self.stdout.write(f"quiet workspace's 2-call trace readable {waited:.2f} s after its export "
                          f"({left:,} flood traces still waiting)")
        if not drain:
            return
        while OtelPending.objects.exists():
            if time.perf_counter() - sent > 3600:
                raise CommandError("the flood was not derived within an hour")
            time.sleep(0.5)
        self.stdout.write(f"flood derived {time.perf_counter() - began:.1f} s after it began")
