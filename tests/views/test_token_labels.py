""""Tokens" names two counts: what the events' stored text holds and what model calls reported
using. Every page labels them apart ("stored tokens", "input / output tokens"), each with the
same title, and no page leaves a bare "Tokens"."""

import re

from django.utils.html import escape

from contextstore.services.events import event_append
from contextstore.services.runs import run_start
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.templatetags.contextstore import TOKEN_TITLES

STORED = f'title="{escape(TOKEN_TITLES["stored"])}"'
USAGE = f'title="{escape(TOKEN_TITLES["usage"])}"'
BARE = re.compile(r">\s*Tokens\s*<|</b> tokens</span>|<dt>(?:tokens )?(?:in|out)</dt>")


def test_stored_tokens_and_model_usage_have_their_own_labels_on_every_page(editor_client, workspace, actor):
    session = session_ensure(workspace=workspace, key="labels", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    run_start(thread=thread, run_id="r-1", actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "where is my order?", "run_id": "r-1"},
        {"type": "LLMCallStart", "call_id": "c1", "run_id": "r-1", "data": {"model": "gpt-4o"}},
        {"type": "LLMComplete", "call_id": "c1", "run_id": "r-1",
         "data": {"model": "gpt-4o", "cost": 0.00042, "input_tokens": 1200, "output_tokens": 34}}])
    pages = {url: editor_client.get(url).content.decode()
             for url in ("/", f"/sessions/{session.pk}/", f"/threads/{thread.pk}/", "/trends/")}

    for url, html in pages.items():
        assert not BARE.search(html), (url, BARE.search(html))
    assert f"<legend {STORED}>Stored tokens</legend>" in pages["/"]
    assert f'data-sort="tokens" {STORED}>Stored tokens</a>' in pages["/"]
    session_page = pages[f"/sessions/{session.pk}/"]
    assert f"{STORED}><b>" in session_page and "</b> stored tokens</span>" in session_page
    assert f"<th class=\"num\" {STORED}>Stored tokens</th>" in session_page
    assert f"<th class=\"num\" {USAGE}>Input / output tokens</th>" in session_page
    assert "1.2k / 34" in session_page
    thread_page = pages[f"/threads/{thread.pk}/"]
    assert "</b> stored tokens in context</span>" in thread_page
    assert f'<span {STORED}>' in thread_page and " tok</span>" in thread_page  # each event's count
    assert f"<div {USAGE}><dt>input tokens</dt><dd>1.2k</dd>" in thread_page
    assert f"<div {USAGE}><dt>output tokens</dt><dd>34</dd>" in thread_page
    assert "r-1: 1234 input + output tokens" in thread_page
    assert f"{USAGE}>Input + output tokens</th>" in pages["/trends/"]
    assert "$0.00042" in thread_page and "$0.00042" in session_page and "$0.00042" in pages["/trends/"]
