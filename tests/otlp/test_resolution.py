"""Session resolution per trace whatever the arrival order: children first, the span naming the
session last, in separate requests; replays; several traces of one conversation."""

import json

import pytest

from contextstore.models import Event, OtelTrace, Session

from .conftest import export, fixture, span
from .test_dialects import CASES


def spans_of(name: str) -> list[dict]:
    return fixture(f"{name}.json")["resourceSpans"][0]["scopeSpans"][0]["spans"]


def shape(session: Session) -> list[tuple[str, str, str]]:
    return [(e.type, e.role, e.content) for e in
            Event.objects.filter(thread__session=session).order_by("seq")]


@pytest.mark.parametrize("order", ["children first, root last", "reversed", "root first, calls reversed"])
def test_spans_in_any_order_and_requests_make_the_same_thread(otlp, order):
    spans = spans_of("semconv_current")
    root, children = spans[0], spans[1:]
    sequence = {"children first, root last": children + [root],
                "reversed": list(reversed(spans)),
                "root first, calls reversed": [root, *reversed(children)]}[order]
    for item in sequence:
        assert otlp(export(item, service="trip-planner")).status_code == 200
    session = Session.objects.get()  # the trace id's session, if one was made, is gone
    assert (session.key, session.user_id, session.agent) == ("conv-semconv", "ann", "planner")
    assert shape(session) == CASES["semconv_current"]["events"]
    assert OtelTrace.objects.get().thread.session == session


def test_a_replay_at_any_later_time_changes_nothing(otlp):
    body = fixture("semconv_current.json")
    assert otlp(body).status_code == 200
    before = list(Event.objects.order_by("seq").values_list("pk", "seq", "client_id"))
    for item in spans_of("semconv_current"):
        assert otlp(export(item, service="trip-planner")).status_code == 200
    assert otlp(body).status_code == 200
    assert list(Event.objects.order_by("seq").values_list("pk", "seq", "client_id")) == before


def chat(span_id: str, trace_id: str, inputs: list[tuple[str, str]], output: str, **attrs) -> dict:
    messages = [{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in inputs]
    return span(span_id, "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": output}]}]), **attrs}, trace_id=trace_id)


def test_turns_in_separate_traces_share_one_thread_and_each_message_is_stored_once(otlp):
    first = chat("00f067aa0ba902b7", "a" * 32, [("user", "Hi")], "Hello!", **{"session.id": "chat-9"})
    second = chat("00f067aa0ba902b8", "b" * 32, [("user", "Hi"), ("assistant", "Hello!"),
                                                 ("user", "Bye")], "Goodbye!", **{"session.id": "chat-9"})
    assert otlp(export(first)).status_code == 200
    assert otlp(export(second)).status_code == 200
    assert shape(Session.objects.get(key="chat-9")) == [
        ("Message", "user", "Hi"), ("LLMCallStart", "", ""), ("Message", "assistant", "Hello!"),
        ("LLMComplete", "", ""), ("Message", "user", "Bye"), ("LLMCallStart", "", ""),
        ("Message", "assistant", "Goodbye!"), ("LLMComplete", "", "")]


def test_the_ids_rank_as_documented_and_the_trace_id_comes_last(otlp):
    trace = "c" * 32
    ranked = span("1000000000000001", "invoke_agent", {
        "session.id": "generic", "gen_ai.conversation.id": "conversation",
        "gcp.vertex.agent.session_id": "adk"}, trace_id=trace)
    assert otlp(export(chat("2000000000000002", trace, [("user", "x")], "y"))).status_code == 200
    assert Session.objects.get().key == trace
    assert otlp(export(ranked)).status_code == 200
    assert Session.objects.get().key == "conversation"
    ours = span("3000000000000003", "step", {"contextstore.session.id": "ours"}, trace_id=trace,
                parent="1000000000000001")
    assert otlp(export(ours)).status_code == 200
    assert Session.objects.get().key == "ours"
    assert shape(Session.objects.get()) == [("Message", "user", "x"), ("LLMCallStart", "", ""),
                                            ("Message", "assistant", "y"), ("LLMComplete", "", "")]


def test_the_session_is_found_by_its_resolved_id(otlp, api_client):
    assert otlp(fixture("adk.json")).status_code == 200
    found = api_client.get("/api/v1/sessions/", {"q": "adk-session-3"}).json()["results"]
    assert [s["key"] for s in found] == ["adk-session-3"]


def test_another_workspace_sees_none_of_it(otlp, other_client):
    assert otlp(fixture("adk.json")).status_code == 200
    assert other_client.get("/api/v1/sessions/", {"q": "adk-session-3"}).json()["results"] == []


@pytest.mark.parametrize("attrs", [{"session.id": "chat\x00x"}, {"session.id": "ok", "user.id": "a\x00b"},
                                   {"session.id": "ok", "gen_ai.agent.name": "agent\x00"}])
def test_names_a_session_cannot_hold_leave_their_traces_underived_and_the_rest_derived(otlp, attrs):
    # sessionspec at OpenTelemetry's door: a NUL in a session's key, user id or agent (each of
    # two new conversations in one pass, the batched path, and alone)
    bad = chat("00f067aa0ba902b7", "a" * 32, [("user", "Hi")], "Hello!", **attrs)
    good = chat("00f067aa0ba902b8", "b" * 32, [("user", "Hi")], "Hello!", **{"session.id": "fine"})
    assert otlp(export(bad, good)).status_code == 200
    assert list(Session.objects.values_list("key", flat=True)) == ["fine"]
    assert not OtelTrace.objects.filter(trace_id="a" * 32, thread__isnull=False).exists()
    assert otlp(export(bad)).status_code == 200  # alone: refused as well
    assert list(Session.objects.values_list("key", flat=True)) == ["fine"]


def test_a_call_whose_parameters_are_too_large_leaves_its_trace_underived(otlp):
    # eventspec's rule for an LLM call's data (params at most 10000 characters as JSON), as
    # every door that takes events applies it
    bad = chat("00f067aa0ba902b7", "a" * 32, [("user", "Hi")], "Hello!",
               **{"session.id": "big", "gen_ai.request.stop_sequences": "x" * 10_001})
    good = chat("00f067aa0ba902b8", "b" * 32, [("user", "Hi")], "Hello!", **{"session.id": "fine"})
    assert otlp(export(bad, good)).status_code == 200
    assert not Event.objects.filter(thread__session__key="big").exists()
    assert Event.objects.filter(thread__session__key="fine", type="LLMCallStart").exists()
