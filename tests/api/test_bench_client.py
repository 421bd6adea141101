import re
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from contextstore.bench.client_calls import CLIENTS
from contextstore.models import Session


def test_bench_client_times_every_client_and_compares_two_checkouts(live_server, transactional_db, token,
                                                                    tmp_path):
    out = StringIO()
    call_command("bench_client", url=live_server.url, token=token[1], samples=3, rounds=1,
                 other=str(settings.BASE_DIR), stdout=out)
    text = out.getvalue()
    number = r"\d+\.\d\d\d"
    for side in ("ours", "other"):
        table = text.split(f"{side}: median of 1 rounds")[1]
        for client in CLIENTS:
            assert re.search(rf"{re.escape(client)} +{number} +{number} +\d+\.\d\d +{number} +{number} "
                             rf"+\d+\.\d\d", table), (side, client)
        assert re.search(r"urllib3 +[\d.]+ +[\d.]+ +1\.00 +[\d.]+ +[\d.]+ +1\.00", table)
    for client in ("ContextStore", "AsyncContextStore"):
        assert re.search(rf"{client} +get \d+\.\d\d \d+\.\d\d +commit \d+\.\d\d \d+\.\d\d", text)
    # every client committed to a session of its own, on each side: 20 warm-up calls and 3 timed
    committed = Session.objects.filter(key__regex=r"^(ours|other)-")
    assert sorted(s.key for s in committed) == sorted(f"{side}-{c}" for side in ("ours", "other")
                                                      for c in ("u", "h", "a", "s", "as"))
    assert {s.threads.get().event_count for s in committed} == {23}
    with pytest.raises(CommandError, match="no clients/python"):
        call_command("bench_client", url=live_server.url, token=token[1], other=str(tmp_path))
