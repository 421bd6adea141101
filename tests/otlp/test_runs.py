"""A run from OTLP ends when its span ends: its agent span's (else the trace's root span's)
start and end are the run's times, and an ERROR status fails it."""

from datetime import UTC, datetime

from contextstore.models import Run

from .conftest import TRACE, export, span

BASE = 1_760_000_000  # seconds; conftest.span counts from it
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
        "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]',
        "gen_ai.conversation.id": "conv-runs"}
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(BASE + seconds, UTC)


def test_a_run_ends_with_its_agent_span_with_the_spans_times(otlp):
    assert otlp(export(span("00000000000000a1", "invoke_agent helper", AGENT, start=10, end=17),
                       span("00000000000000b1", "chat gpt-4o", CHAT, parent="00000000000000a1",
                            start=11, end=15))).status_code == 200
    run = Run.objects.get()
    assert (run.run_id, run.status, run.error) == ("00000000000000a1", "completed", "")
    assert (run.started_at, run.ended_at, run.duration_ms) == (at(10), at(17), 7000)


def test_a_run_whose_span_status_is_error_fails_with_the_status_message(otlp):
    otlp(export(span("00000000000000a1", "invoke_agent helper", AGENT, start=10, end=12,
                     status={"code": 2, "message": "tool quota exceeded"}),
                span("00000000000000b1", "chat gpt-4o", CHAT, parent="00000000000000a1", start=10, end=11)))
    run = Run.objects.get()
    assert (run.status, run.error, run.duration_ms) == ("failed", "tool quota exceeded", 2000)


def test_a_run_is_running_until_its_span_arrives_then_ends(otlp):
    # SDKs export a span when it ends: the children come first, the agent span last.
    otlp(export(span("00000000000000b1", "chat gpt-4o", CHAT, parent="00000000000000a1", start=11, end=15)))
    run = Run.objects.get()
    assert (run.run_id, run.status, run.started_at, run.ended_at) == (TRACE, "running", at(11), None)
    otlp(export(span("00000000000000a1", "root", {"gen_ai.conversation.id": "conv-runs"}, start=10, end=20)))
    run = Run.objects.get()
    assert (run.status, run.started_at, run.ended_at) == ("completed", at(10), at(20))
