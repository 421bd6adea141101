"""demo_frameworks runs a LangGraph graph with a subgraph interrupt() and resume, an ADK
agent and an OpenAI agent (scripted models) in their venvs; their sessions read as
conversations."""

import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from contextstore.models import Event, Session

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_the_venv_frameworks_demos_store_readable_sessions(live_server, transactional_db, token):
    for name in ("langgraph", "adk", "openai-agents"):
        subprocess.run([str(ROOT / "scripts/framework-venv"), name], cwd=ROOT, check=True, timeout=1800)
    out = StringIO()
    call_command("demo_frameworks", url=live_server.url, token=token[1], stdout=out,
                 only=["langgraph", "adk", "openai-agents"])
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["langgraph", "adk", "openai-agents"]
    assert lines[3:] == ["3 of 3 framework demos ran."]
    assert "interrupted" in lines[0] and "resumed: refund sent" in lines[0]

    graph = Session.objects.get(app="langgraph", key__startswith="demo-langgraph-")
    names = sorted(graph.threads.values_list("name", flat=True))
    assert names[0] == "main" and names[1].startswith("ns:approval:")  # the subgraph's namespace
    adk = Session.objects.get(app="demo-shop", user_id="ann")
    rows = Event.objects.filter(thread__session=adk).order_by("seq")
    assert list(rows.values_list("type", "call_id")) == [
        ("Message", ""), ("ToolCall", "call-1"), ("ToolResult", "call-1"), ("LLMOutput", "")]
    assert Event.objects.filter(thread__session=adk, run__isnull=False).count() == 4
    openai = Session.objects.get(app="openai-agents")
    openai_rows = Event.objects.filter(thread__session=openai).order_by("seq")
    assert list(openai_rows.values_list("type", flat=True)) == [
        "Message", "ToolCall", "ToolResult", "LLMOutput", "Message", "LLMOutput"]
