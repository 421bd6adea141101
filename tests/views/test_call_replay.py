"""'As sent' as a chat with its tools and params, the Copy bodies, and replays on the dashboard."""

import json

import pytest

from contextstore.models import CallReplay
from contextstore.services.events import event_append
from contextstore.services.replays import replay_run
from tests.fake_chat import fake_chat
from tests.views.conftest import HTMX

SENT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "List the <b>tests</b>."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "tests/"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "test_a.py\ntest_b.py"},
]
TOOLS = [{"type": "function", "function": {"name": "ls", "description": "List a folder",
                                            "parameters": {"type": "object"}}}]


@pytest.fixture
def recorded(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": SENT, "tools": TOOLS,
                                          "params": {"temperature": 0.2, "max_tokens": 256}}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 900, "output_tokens": 12}},
        {"type": "LLMOutput", "role": "assistant", "content": "Two tests."}])
    return thread


def test_as_sent_is_a_chat_with_tools_params_and_copy_buttons(editor_client, recorded):
    html = editor_client.get(f"/threads/{recorded.pk}/calls/1/sent/", **HTMX).content.decode()
    # a chat, not JSON trees: no tree before the tool definitions (folded, after the params)
    assert html.count('data-message="') == 4 and "json-tree" not in html.split("request-tools")[0]
    assert "List the &lt;b&gt;tests&lt;/b&gt;." in html and "<b>tests" not in html
    assert 'ls(path=&quot;tests/&quot;)' in html
    assert '<pre class="content output">test_a.py\ntest_b.py</pre>' in html
    assert "1 tool: <code>ls</code>" in html and "<dt>temperature</dt><dd>0.2</dd>" in html
    for fmt in ("openai", "anthropic", "curl"):
        assert f'data-copy-url href="/threads/{recorded.pk}/calls/1/request/{fmt}/"' in html
    assert "Replay…" in html


def test_the_copy_bodies_are_each_provider_s_request(editor_client, recorded, settings):
    settings.PLAYGROUND_API_KEY = "sk-real-secret"
    openai = json.loads(editor_client.get(f"/threads/{recorded.pk}/calls/1/request/openai/").content)
    assert openai["messages"] == SENT and openai["tools"] == TOOLS and openai["temperature"] == 0.2
    anthropic = json.loads(editor_client.get(f"/threads/{recorded.pk}/calls/2/request/anthropic/").content)
    assert anthropic["system"] == [{"type": "text", "text": "Be brief."}] and anthropic["max_tokens"] == 256
    curl = editor_client.get(f"/threads/{recorded.pk}/calls/1/request/curl/").content.decode()
    assert "$OPENAI_API_KEY" in curl and "sk-real-secret" not in curl
    assert editor_client.get(f"/threads/{recorded.pk}/calls/1/request/yaml/").status_code == 404


def test_an_editor_replays_and_sees_the_answer_beside_the_original(editor_client, recorded, settings,
                                                                   django_capture_on_commit_callbacks):
    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        response = editor_client.post(f"/threads/{recorded.pk}/calls/1/replay/",
                                      {"model": "gpt-4o-mini", "text-1": "List the docs."})
        replay = CallReplay.objects.get()
        assert response.status_code == 302 and response["Location"].endswith(f"#replay-{replay.pk}")
        assert replay.status == "queued" and server.requests == []  # the request only queued it
        page = editor_client.get(f"/threads/{recorded.pk}/calls/1/replay/").content.decode()
        status_url = f"/threads/{recorded.pk}/calls/1/replays/{replay.pk}/"
        assert f'hx-get="{status_url}" hx-trigger="every 1s"' in page and "queued for a worker" in page
        replay_run(replay_id=replay.pk)  # the worker's part
        assert server.requests[0]["body"]["messages"][1]["content"] == "List the docs."
        card = editor_client.get(status_url, **HTMX).content.decode()
        assert "Replayed answer to: test_a.py" in card and "hx-get" not in card
    html = editor_client.get(f"/threads/{recorded.pk}/calls/1/replay/").content.decode()
    original, replayed = html.split('id="latest-replay"')
    assert "Two tests." in original and "gpt-4o" in original
    assert "Replayed answer to: test_a.py" in replayed and "1 message edited" in replayed
    assert "1.2k" in replayed


def test_viewers_see_replay_disabled_and_are_refused(viewer_client, recorded, settings):
    settings.PLAYGROUND_BASE_URL = "http://127.0.0.1:9/v1"
    assert "Viewers cannot replay a call." in viewer_client.get(
        f"/threads/{recorded.pk}/calls/1/sent/").content.decode()
    page = viewer_client.get(f"/threads/{recorded.pk}/calls/1/replay/").content.decode()
    assert 'data-replay-send disabled aria-describedby="replay-why"' in page
    assert "Viewers cannot replay." in page
    assert viewer_client.post(f"/threads/{recorded.pk}/calls/1/replay/").status_code == 403
    assert not CallReplay.objects.exists()


def test_other_workspaces_get_404_and_a_missing_endpoint_is_said(outsider_client, editor_client, recorded,
                                                                  settings):
    for url in ("replay/", "request/openai/", "sent/"):
        assert outsider_client.get(f"/threads/{recorded.pk}/calls/1/{url}").status_code == 404
    assert outsider_client.post(f"/threads/{recorded.pk}/calls/1/replay/").status_code == 404
    settings.PLAYGROUND_BASE_URL = ""
    page = editor_client.get(f"/threads/{recorded.pk}/calls/1/replay/").content.decode()
    assert 'id="replay-off"' in page and "No endpoint configured." in page
    refused = editor_client.post(f"/threads/{recorded.pk}/calls/1/replay/")
    assert refused.status_code == 409 and not CallReplay.objects.exists()
