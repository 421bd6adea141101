"""Ingested calls work in the dashboard as logged ones do: the call card, "as sent" and the
diff with the previous call (what entered, the prompt cache kept)."""

import re

from django.contrib.auth import get_user_model
from django.test import Client

from contextstore.models import Event, OtelSpan, Thread
from tests.views.conftest import HTMX, editor, editor_client, outsider, outsider_client  # noqa: F401

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


def test_a_session_says_it_came_from_opentelemetry_and_a_run_shows_its_span_waterfall(otlp, editor_client):  # noqa: F811
    assert otlp(fixture("semconv_current.json")).status_code == 200
    thread = Thread.objects.get()
    page = editor_client.get(f"/sessions/{thread.session_id}/").content.decode()
    provenance = re.search(r'<span class="small muted" id="provenance">(.*?)</span>', page, re.S)[1]
    assert "via OpenTelemetry" in provenance and "trip-planner" in provenance
    assert "opentelemetry.instrumentation.anthropic" in provenance
    url = f"/threads/{thread.pk}/runs/b7ad6b7169203331/spans/"
    assert url in page
    waterfall = editor_client.get(url).content.decode()
    rows = re.findall(r'data-span="(\w+)" data-depth="(\d)"', waterfall)
    assert rows == [("b7ad6b7169203331", "0"), ("00f067aa0ba902b7", "1"), ("1111111111111111", "1"),
                    ("2222222222222222", "1"), ("3333333333333333", "1")]
    assert "booking API down" in waterfall and "+1000.0 ms" in waterfall and "2000.0 ms" in waterfall
    assert editor_client.get(f"/threads/{thread.pk}/runs/nope/spans/").status_code == 404


def test_another_workspace_cannot_see_the_waterfall(otlp, outsider_client):  # noqa: F811
    assert otlp(fixture("semconv_current.json")).status_code == 200
    thread = Thread.objects.get()
    assert outsider_client.get(f"/threads/{thread.pk}/runs/b7ad6b7169203331/spans/").status_code == 404


def test_admins_see_the_raw_spans_read_only(otlp, db):
    assert otlp(fixture("adk.json")).status_code == 200
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-for-tests-123"))
    listing = client.get("/admin/contextstore/otelspan/", {"q": "4af7651916cd43dd8448eb211c80319c"})
    assert listing.status_code == 200 and "call_llm" in listing.content.decode()
    span = OtelSpan.objects.first()
    assert client.post(f"/admin/contextstore/otelspan/{span.pk}/delete/", {"post": "yes"}).status_code == 403
