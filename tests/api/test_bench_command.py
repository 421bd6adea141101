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
