"""`manage.py otel_remap` derives traces again from the kept spans: a better mapping reaches
sessions already ingested, and running it twice changes nothing more."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from contextstore.models import Event, OtelTrace, Session
from contextstore.services.events import event_append

from .conftest import fixture


def remap(*traces: str) -> str:
    out = StringIO()
    args = ["otel_remap", "--workspace", "acme"] + [a for t in traces for a in ("--trace", t)]
    call_command(*args, stdout=out)
    return out.getvalue()


def shape() -> list[tuple[str, str, str]]:
    return list(Event.objects.order_by("thread__session", "seq").values_list("type", "role", "content"))


def test_remap_writes_a_derived_session_anew_from_the_raw_spans(otlp, monkeypatch):
    from contextstore.otel import mapping

    # an older mapping that did not know the flattened dialect
    monkeypatch.setattr(mapping, "_flat_messages", lambda items: [])
    assert otlp(fixture("flattened.json")).status_code == 200
    assert ("Message", "user", "Weather in Oslo?") not in shape()
    monkeypatch.undo()
    assert remap() == "1 traces derived, 1 sessions rebuilt\n"
    assert shape()[:3] == [("Message", "user", "Weather in Oslo?"), ("LLMCallStart", "", ""),
                           ("ToolCall", "assistant", "Calling weather")]
    before = shape()
    remap()
    assert shape() == before
    assert Session.objects.get().key == "conv-flat" and OtelTrace.objects.get().thread is not None


def test_remap_keeps_what_others_wrote_and_adds_only_what_is_missing(otlp, actor):
    assert otlp(fixture("span_events.json")).status_code == 200
    thread = OtelTrace.objects.get().thread
    event_append(thread=thread, events=[{"type": "Feedback", "role": "user", "content": "nice"}], actor=actor)
    Event.objects.filter(thread=thread, content="4").delete()  # as if the old mapping missed it
    assert remap("1AF7651916CD43DD8448EB211C80319C") == "1 traces derived, 0 sessions rebuilt\n"
    assert [e[2] for e in shape()] == ["Be terse.", "2+2?", "", "", "nice", "4"]
    assert Event.objects.filter(type="Feedback").exists()


def test_remap_names_an_unknown_workspace(db):
    with pytest.raises(CommandError, match="No workspace 'nope'"):
        call_command("otel_remap", "--workspace", "nope")
