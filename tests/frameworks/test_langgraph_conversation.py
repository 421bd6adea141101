"""A LangGraph conversation (a real graph in .venv-langgraph: a scripted chat model calling a
tool through LangGraph's ToolNode, saved by ContextStoreSaver against the live server) reads as
a conversation on the thread page and in its search, not as checkpoint blobs."""

import os
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from contextstore.models import Event, Membership, Thread

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_a_langgraph_thread_page_shows_its_messages_and_tool_calls(live_server, transactional_db,
                                                                     token, workspace):
    subprocess.run([str(ROOT / "scripts/framework-venv"), "langgraph"], cwd=ROOT, check=True, timeout=1800)
    env = {**os.environ, "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1],
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([str(ROOT / ".venv-langgraph/bin/python"), "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "-c", "framework_tests/pytest.ini",
                          "framework_tests/test_langgraph_messages.py", "-k", "reads_as_a_conversation"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

    thread = Thread.objects.get(session__app__endswith="/langgraph", session__key="t1", name="main")
    shown = Event.objects.filter(thread=thread, visible=True).order_by("seq")
    types = list(shown.values_list("type", flat=True))
    assert types == ["Message", "Message", "ToolCall", "ToolResult", "LLMOutput"]
    person = get_user_model().objects.create_user("lee", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(person)
    url = reverse("contextstore:thread", args=[thread.pk])
    page = client.get(url).content.decode()
    for text in ("Be brief.", "Weather in Paris?", "Let me look.", "weather(city=&quot;Paris&quot;)",
                 "18C, cloudy in Paris", "It is 18C, cloudy in Paris."):
        assert text in page, text
    found = client.get(url, {"q": "cloudy in Paris"}).content.decode()
    assert "18C, cloudy in Paris" in found and "Let me look." not in found
