"""The demo command runs every framework's agent against a live server, one session each."""

from io import StringIO

from django.core.management import call_command

from contextstore.models import Session


def test_each_framework_gets_its_own_session(live_server, token):
    out = StringIO()

    call_command("demo_frameworks", url=live_server.url, token=token[1], stdout=out)

    lines = out.getvalue().splitlines()
    # The venv frameworks' demos follow when their venvs exist (tests/frameworks/ checks them).
    assert [line.split(":")[0] for line in lines][:5] == [
        "peteos", "clientai", "agentscope", "agent-framework", "nooa"]
    agents = set(Session.objects.filter(key__startswith="demo-").values_list("agent", flat=True))
    assert agents >= {"peteos demo", "clientai demo", "agentscope demo", "nooa demo"}
    assert Session.objects.filter(key__startswith="demo-", app="", event_count__gt=0).count() == 5
    assert "The user's name is Ruaidhri." in lines[3]
