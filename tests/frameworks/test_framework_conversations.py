"""A conversation with tool calls run by the real OpenAI Agents SDK and ADK (in their own
virtualenvs, against the live server: framework_tests/test_*_conversation.py) reads as a
conversation: the renders pair each call with its result (asserted there), the thread page
shows the text, the calls and their results, and its search finds a result."""

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
@pytest.mark.parametrize("framework, key", [("openai-agents", "agents-weather"), ("adk", "adk-weather")])
def test_a_framework_conversation_with_tool_calls_reads_as_one(framework, key, live_server, transactional_db,
                                                                 token, workspace):
    subprocess.run([str(ROOT / "scripts/framework-venv"), framework], cwd=ROOT, check=True, timeout=1800)
    env = {**os.environ, "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1],
           "PYTHONPATH": str(ROOT)}
    test_file = f"framework_tests/test_{framework.replace('-', '_')}_conversation.py"
    run = subprocess.run([str(ROOT / f".venv-{framework}/bin/python"), "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "-c", "framework_tests/pytest.ini", test_file],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

    thread = Thread.objects.get(session__key=key, name="main")
    assert Event.objects.filter(thread=thread, type="ToolCall").exists()
    person = get_user_model().objects.create_user("lee", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(person)
    url = reverse("contextstore:thread", args=[thread.pk])
    page = client.get(url).content.decode()
    for text in ("Weather in Paris?", "Let me look.", "weather(", "18C, cloudy in Paris",
                 "18C, cloudy in Oslo", "It is 18C, cloudy in Paris."):
        assert text in page, text
    assert "18C, cloudy in Oslo" in client.get(url, {"q": "cloudy in Oslo"}).content.decode()
