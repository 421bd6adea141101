"""A trace from OTLP in the dashboard: the run page nests agent → sub-agent → LLM call / tool
call by the spans' parent ids, with the spans' own times, and each span opens to its
attributes and events (escaped)."""

import json
import re
from datetime import UTC, datetime

from contextstore.models import Event, Run, Thread
from contextstore.selectors.trace import PAGE_NODES, run_tree, trace_node
from tests.views.conftest import HTMX, editor, editor_client, outsider, outsider_client  # noqa: F401

from .conftest import export, span

ROOT, SUB, CHAT, TOOL = "a000000000000001", "a000000000000002", "a000000000000003", "a000000000000004"


def nested_trace() -> dict:
    chat = span(
        CHAT,
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.request.temperature": 0.2,
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Weather in <b>Rome</b>?"}]}]
            ),
        },
        parent=SUB,
        start=12,
        end=14,
    )
    tool = span(
        TOOL,
        "execute_tool get_weather",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": '{"city": "Rome"}',
        },
        parent=SUB,
        start=15,
        end=16,
        events=[
            {
                "name": "exception",
                "timeUnixNano": str(1_760_000_015_500_000_000),
                "attributes": [
                    {"key": "exception.message", "value": {"stringValue": "<script>x()</script>"}}
                ],
            }
        ],
        status={"code": 2, "message": "weather API down"},
    )
    sub = span(
        SUB,
        "invoke_agent researcher",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
        parent=ROOT,
        start=11,
        end=17,
    )
    root = span(
        ROOT,
        "invoke_agent planner",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "planner",
            "gen_ai.conversation.id": "conv-tree",
        },
        start=10,
        end=20,
    )
    return export(chat, tool, sub, root)


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(1_760_000_000 + seconds, UTC)


def test_the_tree_nests_agent_sub_agent_llm_and_tool_spans_with_their_times(otlp):
    assert otlp(nested_trace()).status_code == 200
    thread = Thread.objects.get()
    # the root agent logged nothing of its own (no run); its sub-agent's run shows the whole trace
    assert not Run.objects.filter(run_id=ROOT).exists()
    tree = run_tree(thread=thread, run=Run.objects.get(run_id=SUB))
    assert tree.source == "otel" and not tree.truncated
    assert [(n.key, n.kind, n.depth) for n in tree.nodes] == [
        (f"span:{ROOT}", "agent", 0),
        (f"span:{SUB}", "agent", 1),
        (f"span:{CHAT}", "llm", 2),
        (f"span:{TOOL}", "tool", 2),
    ]
    assert [(n.start, n.end) for n in tree.nodes] == [
        (at(10), at(20)),
        (at(11), at(17)),
        (at(12), at(14)),
        (at(15), at(16)),
    ]
    assert tree.total_ms == 10_000 and tree.nodes[2].offset_ms == 2000 and tree.nodes[2].duration_ms == 2000
    assert [n.failed for n in tree.nodes] == [False, False, False, True]
    assert tree.nodes[3].note == "weather API down"
    assert [n.current for n in tree.nodes] == [False, True, False, False]
    # the events carry the spans' times too, not the time they were received
    call = Event.objects.get(type="LLMCallStart")
    assert call.occurred_at == at(12) and Event.objects.get(type="LLMComplete").occurred_at == at(14)
    # the run itself took its span's times and status
    run = Run.objects.get(run_id=SUB)
    assert (run.started_at, run.ended_at, run.status) == (at(11), at(17), "completed")


def test_a_span_opens_to_its_attributes_and_events(otlp):
    assert otlp(nested_trace()).status_code == 200
    thread = Thread.objects.get()
    node = trace_node(thread=thread, key=f"span:{TOOL}")
    assert node is not None and node.kind == "tool" and node.status == "error: weather API down"
    assert ("gen_ai.tool.name", "get_weather") in node.attributes
    assert ("resource: service.name", "weather-agent") in node.attributes
    assert [(e.name, e.attributes) for e in node.events] == [
        ("exception", [("exception.message", "<script>x()</script>")])
    ]
    assert node.events[0].at == datetime.fromtimestamp(1_760_000_015.5, UTC)
    chat = trace_node(thread=thread, key=f"span:{CHAT}")
    assert chat is not None and ("gen_ai.request.temperature", "0.2") in chat.attributes
    assert trace_node(thread=thread, key="span:ffffffffffffffff") is None
    assert trace_node(thread=thread, key="span:nope") is None and trace_node(thread=thread, key="x") is None


def test_the_run_page_shows_the_tree_and_a_node_opens_escaped(otlp, editor_client):  # noqa: F811
    assert otlp(nested_trace()).status_code == 200
    thread = Thread.objects.get()
    page = editor_client.get(f"/threads/{thread.pk}/runs/{SUB}/spans/").content.decode()
    nodes = re.findall(r'data-node="([^"]+)" data-kind="(\w+)" data-span="\w+" data-depth="(\d)"', page)
    assert nodes == [
        (f"span:{ROOT}", "agent", "0"),
        (f"span:{SUB}", "agent", "1"),
        (f"span:{CHAT}", "llm", "2"),
        (f"span:{TOOL}", "tool", "2"),
    ]
    assert "+2000.0 ms" in page and "weather API down" in page
    url = f"/threads/{thread.pk}/trace/span:{TOOL}/"
    assert f'hx-get="{url}"' in page and f'href="{url}"' in page
    fragment = editor_client.get(url, **HTMX).content.decode()
    assert "<html" not in fragment and "get_weather" in fragment
    assert "<script>x()</script>" not in fragment and "&lt;script&gt;x()&lt;/script&gt;" in fragment
    chat = editor_client.get(f"/threads/{thread.pk}/trace/span:{CHAT}/").content.decode()
    assert "<html" in chat and "&lt;b&gt;Rome&lt;/b&gt;" in chat and "<b>Rome</b>" not in chat


def test_another_workspace_cannot_open_a_span(otlp, outsider_client, editor_client):  # noqa: F811
    assert otlp(nested_trace()).status_code == 200
    thread = Thread.objects.get()
    assert outsider_client.get(f"/threads/{thread.pk}/trace/span:{TOOL}/").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/trace/span:ffffffffffffffff/").status_code == 404


def test_a_large_trace_is_read_in_few_queries_cut_at_the_limit_and_paged(
    thread,
    actor,
    django_assert_num_queries,
    editor_client,  # noqa: F811
):
    """Spans stored as ingest keeps them (a root agent and 2,100 tool spans under it): the tree
    reads a fixed number of queries whatever the trace's size, says it was cut, and shows
    PAGE_NODES nodes at a time."""
    from contextstore.models import OtelSpan, OtelTrace
    from contextstore.selectors.spans import MAX_SPANS
    from contextstore.services.sessions import session_update

    session_update(session=thread.session, actor=actor, metadata={"otel": {"source": "opentelemetry"}})
    trace_id, base = "7" * 32, 1_760_000_000 * 10**9
    OtelTrace.objects.create(workspace=thread.workspace, trace_id=trace_id, thread=thread)
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "big": "x" * 2000}
    OtelSpan.objects.bulk_create(
        [
            OtelSpan(
                workspace=thread.workspace,
                trace_id=trace_id,
                span_id=ROOT,
                name="invoke_agent a",
                attributes={"gen_ai.operation.name": "invoke_agent"},
                start_ns=base,
                end_ns=base + 10**10,
            )
        ]
        + [
            OtelSpan(
                workspace=thread.workspace,
                trace_id=trace_id,
                span_id=f"{k + 1:016x}",
                parent_span_id=ROOT,
                name=f"execute_tool t{k}",
                attributes=tool,
                start_ns=base + k,
                end_ns=base + k + 10**6,
            )
            for k in range(MAX_SPANS + 100)
        ]
    )
    run = Run.objects.create(thread=thread, run_id=ROOT)
    thread.session.refresh_from_db()
    # the trace's id, its spans; for the page shown: runs, LLM calls, the rest's kind attributes
    with django_assert_num_queries(5):
        tree = run_tree(thread=thread, run=run)
    assert tree.truncated and tree.count == MAX_SPANS and len(tree.nodes) == PAGE_NODES
    assert tree.nodes[0].kind == "agent" and {n.kind for n in tree.nodes[1:]} == {"tool"}
    assert (tree.offset, tree.previous_offset, tree.next_offset) == (0, None, PAGE_NODES)
    last = run_tree(thread=thread, run=run, offset=MAX_SPANS - 10)
    assert (
        len(last.nodes) == 10
        and last.next_offset is None
        and last.previous_offset == MAX_SPANS - 10 - PAGE_NODES
    )
    assert {n.kind for n in last.nodes} == {"tool"} and last.nodes[0].depth == 1
    page = editor_client.get(f"/threads/{thread.pk}/runs/{ROOT}/spans/?from=200").content.decode()
    assert page.count("data-node=") == PAGE_NODES and "Nodes 201–400 of 2000 are shown" in page
    assert (
        'href="?from=0#trace-heading" data-previous' in page
        and 'href="?from=400#trace-heading" data-next' in page
    )
    assert "Only part of this trace is shown" in page
