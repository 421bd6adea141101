"""The Agents SDK's OpenAIConversationsSession and the async openai SDK, unmodified, in the
openai-agents virtualenv against the live server's /openai/v1
(framework_tests/test_openai_conversations_session.py); the conversation the Runner kept then
reads on its thread page as any other thread."""

import os
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from contextstore.models import Event, Membership, Thread
from contextstore.selectors.conversations import APP

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_openai_conversations_session_runs_against_the_live_server(live_server, transactional_db, token,
                                                                    workspace):
    subprocess.run([str(ROOT / "scripts/framework-venv"), "openai-agents"], cwd=ROOT, check=True,
                   timeout=1800)
    env = {**os.environ, "CONTEXTSTORE_URL": live_server.url, "CONTEXTSTORE_TOKEN": token[1],
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([str(ROOT / ".venv-openai-agents/bin/python"), "-m", "pytest", "-q", "-p",
                          "no:cacheprovider", "-c", "framework_tests/pytest.ini",
                          "framework_tests/test_openai_conversations_session.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout

    thread = Thread.objects.get(session__app=APP, session__archived=False,
                                events__content="Weather in Paris?")
    assert Event.objects.filter(thread=thread, type="ToolCall", call_id__startswith="call_").exists()
    person = get_user_model().objects.create_user("lee", password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=person, role=Membership.Role.VIEWER)
    client = Client()
    client.force_login(person)
    page = client.get(reverse("contextstore:thread", args=[thread.pk])).content.decode()
    for text in ("Weather in Paris?", "Let me look.", "weather(", "18C, cloudy in Paris", "And tomorrow?"):
        assert text in page, text
