import re
from io import StringIO

from django.core.management import call_command


def test_bench_api_reports_every_figure_against_a_running_server(live_server, transactional_db,
                                                                token):
    out = StringIO()
    call_command("bench_api", url=live_server.url, token=token[1], seconds=0.2, large=300,
                 samples=5, stdout=out)
    text = out.getvalue()
    for clients in (1, 4, 16):
        assert re.search(rf"batch appends \(100/request\), +{clients} clients: +[\d,]+ events/s", text)
    assert re.search(r"single-event appends, 1 client: +[\d,]+ events/s", text)
    assert re.search(r"GET /context/ on +1,000 events: p50 +[\d.]+ ms, p95 +[\d.]+ ms", text)
    assert re.search(r"GET /context/ on +300 events: p50", text)


def test_bench_core_reports_the_revision_figures(db):
    out = StringIO()
    call_command("bench_core", sizes="20,40", repeat=1, revisions=5, state_sizes="1000,20000",
                 stdout=out)
    text = out.getvalue()
    for size in ("1,000", "20,000"):
        assert re.search(rf"state of +{size} B: revision [\d.]+ ms median, [\d.]+ ms mean .*"
                         rf"whole write [\d.]+ ms; HTTP PATCH [\d.]+ ms; stored [\d,]+ B/revision",
                         text)
        assert re.search(rf"state of +{size} B: revision alone [\d.]+ ms median", text)
    assert re.search(r"revision alone: 20,000 B vs 1,000 B state \(median, target <= 1.5\): [\d.]+x",
                     text)
