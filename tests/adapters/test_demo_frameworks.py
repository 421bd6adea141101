"""The demo command runs every framework's agent against a live server, one session each, and
says for each framework it cannot run why, and what installs it."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from contextstore.management.commands import demo_frameworks
from contextstore.models import Session

IN_PROCESS = ["peteos", "clientai", "agentscope", "agent-framework", "nooa"]


@pytest.fixture
def without_langgraph_and_adk(monkeypatch):
    """No framework venvs, and LangGraph and ADK not importable here (the OpenAI Agents SDK is:
    the server's dev dependencies pin it), whatever this machine has built."""
    real = demo_frameworks.importable
    monkeypatch.setattr(demo_frameworks, "venv_python", lambda name: None)
    monkeypatch.setattr(demo_frameworks, "importable",
                        lambda module: module not in ("langgraph", "google.adk") and real(module))


def test_all_eight_frameworks_run_or_say_why_not(live_server, token, without_langgraph_and_adk):
    out = StringIO()

    call_command("demo_frameworks", url=live_server.url, token=token[1], stdout=out)

    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[:8]] == [*IN_PROCESS, "langgraph", "adk", "openai-agents"]
    assert lines[5] == ("langgraph: skipped: langgraph is not importable here, and .venv-langgraph "
                        "does not exist; install it with: make framework-venvs "
                        "(or: pip install langgraph==1.2.22)")
    assert lines[6].startswith("adk: skipped: google.adk is not importable here")
    assert "pip install google-adk==2.13.0" in lines[6]
    # importable here: its demo ran in this process
    assert "'You asked about order 42.'; 6 items in the session" in lines[7]
    assert lines[8] == "6 of 8 framework demos ran; skipped langgraph, adk (see above)."
    agents = set(Session.objects.filter(key__startswith="demo-").values_list("agent", flat=True))
    assert agents >= {"peteos demo", "clientai demo", "agentscope demo", "nooa demo"}
    assert Session.objects.filter(key__startswith="demo-", app="", event_count__gt=0).count() == 5
    assert Session.objects.filter(app="openai-agents", event_count=6).count() == 1
    assert "The user's name is Ruaidhri." in lines[3]


def test_a_framework_asked_for_by_name_that_cannot_run_is_an_error(db, without_langgraph_and_adk,
                                                                   monkeypatch):
    monkeypatch.setattr(demo_frameworks, "importable", lambda module: module not in ("nooa", "langgraph"))
    out = StringIO()

    with pytest.raises(CommandError) as refused:
        call_command("demo_frameworks", url="http://127.0.0.1:9", token="cs_unused", stdout=out,
                     only=["nooa", "langgraph", "peteos"])

    assert str(refused.value) == (
        "Cannot run nooa: skipped: nooa is not importable here; install it with: pip install nooa==0.0.10; "
        "langgraph: skipped: langgraph is not importable here, and .venv-langgraph does not exist; "
        "install it with: make framework-venvs (or: pip install langgraph==1.2.22)")
    assert out.getvalue() == ""  # nothing ran


def test_a_missing_framework_is_skipped_by_name_when_none_was_asked_for(live_server, token, monkeypatch):
    monkeypatch.setattr(demo_frameworks, "venv_python", lambda name: None)
    monkeypatch.setattr(demo_frameworks, "importable",
                        lambda module: module in ("clientai", "contextstore_client"))
    out = StringIO()

    call_command("demo_frameworks", url=live_server.url, token=token[1], stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0] == ("peteos: skipped: peteos is not importable here; "
                        "install it with: pip install peteos==0.6.13")
    assert lines[1].startswith("clientai: session demo-clientai-")
    assert lines[-1] == ("1 of 8 framework demos ran; skipped peteos, agentscope, agent-framework, nooa, "
                         "langgraph, adk, openai-agents (see above).")


def test_a_demo_that_fails_is_reported_and_the_command_exits_non_zero(live_server, token, monkeypatch):
    monkeypatch.setattr(demo_frameworks, "venv_python", lambda name: None)
    from contextstore_client.adapters import demo

    def broken(cs, key):
        raise RuntimeError("the framework changed its API")

    monkeypatch.setitem(demo.DEMOS, "clientai", broken)
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="1 demo\\(s\\) failed: clientai"):
        call_command("demo_frameworks", url=live_server.url, token=token[1], stdout=out, stderr=err,
                     only=["clientai", "peteos"])

    assert "clientai: failed: RuntimeError: the framework changed its API" in err.getvalue()
    assert out.getvalue().splitlines()[0].startswith("peteos: session demo-peteos-")


def test_without_the_client_installed_it_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(demo_frameworks, "importable", lambda module: module != "contextstore_client")

    with pytest.raises(CommandError, match=r"not installed here: pip install \./clients/python"):
        call_command("demo_frameworks", url="http://127.0.0.1:9", token="cs_unused")
