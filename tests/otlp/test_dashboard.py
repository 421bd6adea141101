"""Ingested calls work in the dashboard as logged ones do: the call card, "as sent" and the
diff with the previous call (what entered, the prompt cache kept)."""

import re

from contextstore.models import Event, Thread
from tests.views.conftest import HTMX, editor, editor_client  # noqa: F401  (fixtures)

from .conftest import fixture


def test_ingested_calls_have_cards_as_sent_and_a_diff(otlp, editor_client):  # noqa: F811
    assert otlp(fixture("semconv_current.json")).status_code == 200
    thread = Thread.objects.get()
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert len(re.findall(r'<article class="call-card', page)) == 2
    assert "claude-sonnet-20260101" in page
    first, second = Event.objects.filter(type="LLMCallStart").order_by("seq")
    sent = editor_client.get(f"/threads/{thread.pk}/calls/{second.seq}/sent/").content.decode()
    assert "You plan trips." in sent and "Plan Rome" in sent and "toolu_1" in sent
    diff = editor_client.get(f"/threads/{thread.pk}/calls/{second.seq}/diff/", **HTMX).content.decode()
    assert 'data-cache="kept"' in diff and "2 → 4 messages, the first 2 unchanged" in diff
    entered = diff[diff.index("<h2>Entered</h2>"):diff.index("<h2>Left</h2>")]
    assert "warm" in entered and "weather" in entered


def test_agent_text_from_spans_is_escaped(otlp, editor_client):  # noqa: F811
    body = fixture("span_events.json")
    attrs = body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["events"][1]["attributes"]
    attrs[0]["value"]["stringValue"] = "<script>alert(1)</script>"
    assert otlp(body).status_code == 200
    page = editor_client.get(f"/threads/{Thread.objects.get().pk}/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
