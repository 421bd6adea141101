"""Finding 4 ("no workspace can starve another"): derivation claimed pending traces in
primary-key order across all workspaces, so one workspace's single trace waited behind
another's backlog (about an hour). A pass now takes them round robin across workspaces."""

import pytest

from contextstore.models import Event, OtelPending, Session
from contextstore.otel.wire import Span
from contextstore.services.common import Actor
from contextstore.services.otlp import ingest, pending

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]'}


def one_span_trace(trace_id: str) -> Span:
    return Span(trace_id=trace_id, span_id="00000000000000a1", parent_span_id="", name="chat gpt-4o",
                kind=3, start_ns=1_760_000_000 * 10**9, end_ns=1_760_000_001 * 10**9, status_code=0,
                status_message="", attributes=CHAT, events=[], resource={}, scope={})


@pytest.fixture
def unpublished(monkeypatch):
    monkeypatch.setattr(ingest, "pending_publish", lambda: None)


def test_a_quiet_workspaces_trace_is_derived_in_the_first_pass_behind_anothers_backlog(
        workspace, other_workspace, unpublished):
    backlog = [one_span_trace(f"{i + 1:032x}") for i in range(250)]
    ingest.export_ingest(workspace=workspace, spans=backlog, actor=Actor.worker("test"))
    quiet = "f" * 32
    ingest.export_ingest(workspace=other_workspace, spans=[one_span_trace(quiet)], actor=Actor.worker("test"))
    assert OtelPending.objects.count() == 251

    taken, done, failed = pending._pass(100)

    assert (taken, done, failed) == (100, 100, 0)
    assert not OtelPending.objects.filter(workspace=other_workspace).exists()
    assert Session.objects.get(workspace=other_workspace).key == quiet
    assert Event.objects.filter(thread__session__workspace=other_workspace).exists()
    # the backlog's oldest 99 went with it, in their order
    left = sorted(OtelPending.objects.filter(workspace=workspace).values_list("trace_id", flat=True))
    assert left == [f"{i + 1:032x}" for i in range(99, 250)]


def test_each_workspace_gets_its_share_of_a_pass(workspace, other_workspace, unpublished):
    for ws, prefix in ((workspace, "a"), (other_workspace, "b")):
        ingest.export_ingest(workspace=ws, spans=[one_span_trace(f"{prefix}{i:031x}") for i in range(30)],
                             actor=Actor.worker("test"))
    pending._pass(20)
    assert OtelPending.objects.filter(workspace=workspace).count() == 20
    assert OtelPending.objects.filter(workspace=other_workspace).count() == 20
