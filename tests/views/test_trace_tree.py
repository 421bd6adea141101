"""A run recorded through the API as a trace: the run, its LLM calls and tool calls, and the
sub-agent runs it started (a BeforeAgentCall naming data.parent_run_id), nested, with the
events' own times; each node opens to its attributes and events, escaped."""

import re

from contextstore.models import Run
from contextstore.selectors import trace
from contextstore.selectors.trace import run_tree, trace_node
from contextstore.services.events import event_append
from tests.views.conftest import HTMX


def at(second: float) -> str:
    return f"2026-01-05T10:00:{second:06.3f}Z"


def nested_runs() -> list[dict]:
    plan, research = {"run_id": "plan"}, {"run_id": "research"}
    return [
        {
            "type": "BeforeAgentCall",
            "call_id": "plan.solve",
            "occurred_at": at(0),
            "data": {"agent": "planner"},
            **plan,
        },
        {"type": "Message", "role": "user", "content": "Trip to Rome?", "occurred_at": at(0), **plan},
        {
            "type": "LLMCallStart",
            "call_id": "c1",
            "occurred_at": at(1),
            **plan,
            "data": {"model": "gpt-4o", "params": {"temperature": 0.2}},
        },
        {
            "type": "LLMComplete",
            "call_id": "c1",
            "occurred_at": at(2),
            **plan,
            "data": {"input_tokens": 10, "output_tokens": 3},
        },
        # the planner hands the weather to a sub-agent
        {
            "type": "BeforeAgentCall",
            "call_id": "research.solve",
            "occurred_at": at(3),
            **research,
            "data": {"agent": "researcher <i>", "parent_run_id": "plan"},
        },
        {
            "type": "LLMCallStart",
            "call_id": "c2",
            "occurred_at": at(4),
            "data": {"model": "gpt-4o-mini"},
            **research,
        },
        {
            "type": "ToolCall",
            "role": "assistant",
            "content": "",
            "occurred_at": at(5),
            **research,
            "parts": [
                {"type": "tool_call", "id": "t1", "name": "get_weather", "arguments": {"city": "<b>Rome</b>"}}
            ],
        },
        {"type": "LLMComplete", "call_id": "c2", "occurred_at": at(5), **research, "data": {}},
        {
            "type": "ToolResult",
            "role": "tool",
            "content": "sunny <script>x()</script>",
            "occurred_at": at(6),
            **research,
            "data": {"tool_call_id": "t1"},
        },
        {"type": "AfterAgentCall", "call_id": "research.solve", "occurred_at": at(7), **research},
        {"type": "LLMCallStart", "call_id": "c3", "occurred_at": at(8), "data": {"model": "gpt-4o"}, **plan},
        {"type": "LLMComplete", "call_id": "c3", "occurred_at": at(9), "data": {}, **plan},
    ]


def test_a_run_nests_its_calls_tools_and_sub_agent_runs_in_time_order(thread, actor):
    event_append(thread=thread, actor=actor, events=nested_runs())
    plan = Run.objects.get(run_id="plan")
    tree = run_tree(thread=thread, run=plan)
    assert tree.source == "api" and not tree.truncated
    research = Run.objects.get(run_id="research")
    assert [(n.key, n.kind, n.name, n.depth) for n in tree.nodes] == [
        (f"run:{plan.pk}", "agent", "planner", 0),
        ("event:3", "llm", "LLM call gpt-4o", 1),
        (f"run:{research.pk}", "agent", "researcher <i>", 1),
        ("event:6", "llm", "LLM call gpt-4o-mini", 2),
        ("event:7", "tool", "get_weather", 2),
        ("event:11", "llm", "LLM call gpt-4o", 1),
    ]
    # times are the events' own, not the server's
    assert [n.offset_ms for n in tree.nodes] == [0, 1000, 3000, 4000, 5000, 8000]
    assert [n.duration_ms for n in tree.nodes] == [None, 1000, 4000, 1000, 1000, 1000]  # research: 3 s → 7 s
    assert tree.total_ms == 9000 and [n.current for n in tree.nodes] == [True] + [False] * 5
    # the sub-agent's own page starts at it
    assert [n.depth for n in run_tree(thread=thread, run=research).nodes] == [0, 1, 1]


def test_a_sub_agent_cycle_and_a_missing_parent_do_not_loop(thread, actor):
    event_append(
        thread=thread,
        actor=actor,
        events=[
            {"type": "BeforeAgentCall", "run_id": "a", "data": {"parent_run_id": "b"}},
            {"type": "BeforeAgentCall", "run_id": "b", "data": {"parent_run_id": "a"}},
            {"type": "BeforeAgentCall", "run_id": "c", "data": {"parent_run_id": "gone"}},
        ],
    )
    tree = run_tree(thread=thread, run=Run.objects.get(run_id="a"))
    assert [(n.name, n.depth) for n in tree.nodes] == [("a", 0), ("b", 1)]
    assert [n.name for n in run_tree(thread=thread, run=Run.objects.get(run_id="c")).nodes] == ["c"]


def test_a_tree_with_more_sub_agents_than_the_limit_says_it_was_cut(thread, actor, monkeypatch):
    monkeypatch.setattr(trace, "MAX_RUNS", 2)
    event_append(
        thread=thread,
        actor=actor,
        events=[{"type": "BeforeAgentCall", "run_id": "root"}]
        + [
            {"type": "BeforeAgentCall", "run_id": f"sub{k}", "data": {"parent_run_id": "root"}}
            for k in range(5)
        ],
    )
    tree = run_tree(thread=thread, run=Run.objects.get(run_id="root"))
    assert tree.truncated and [n.name for n in tree.nodes] == ["root", "sub0", "sub1"]


def test_a_node_opens_to_its_attributes_and_events(thread, actor):
    event_append(thread=thread, actor=actor, events=nested_runs())
    call = trace_node(thread=thread, key="event:3")
    assert call is not None and call.kind == "llm"
    assert ("params", '{"temperature": 0.2}') in call.attributes
    assert ("LLMComplete #4: input_tokens", "10") in call.attributes
    assert [e.name for e in call.events] == ["LLMCallStart #3", "LLMComplete #4"]
    tool = trace_node(thread=thread, key="event:7")
    assert tool is not None and [e.name for e in tool.events] == ["ToolCall #7", "ToolResult #9"]
    assert ("content", "sunny <script>x()</script>") in tool.events[1].attributes
    run = trace_node(thread=thread, key=f"run:{Run.objects.get(run_id='research').pk}")
    assert run is not None and ("agent call: parent_run_id", "plan") in run.attributes
    assert [e.name for e in run.events] == ["BeforeAgentCall #5", "AfterAgentCall #10"]
    assert (
        trace_node(thread=thread, key="event:999") is None
        and trace_node(thread=thread, key="run:999999") is None
    )
    assert trace_node(thread=thread, key="event:x") is None


def test_the_run_page_shows_the_tree_and_a_node_opens_escaped(editor_client, outsider_client, thread, actor):
    event_append(thread=thread, actor=actor, events=nested_runs())
    page = editor_client.get(f"/threads/{thread.pk}/runs/plan/spans/").content.decode()
    nodes = re.findall(r'data-node="([^"]+)" data-kind="(\w+)" data-depth="(\d)"', page)
    assert [(k.split(":")[0], kind, d) for k, kind, d in nodes] == [
        ("run", "agent", "0"),
        ("event", "llm", "1"),
        ("run", "agent", "1"),
        ("event", "llm", "2"),
        ("event", "tool", "2"),
        ("event", "llm", "1"),
    ]
    assert "researcher &lt;i&gt;" in page and "researcher <i>" not in page
    url = f"/threads/{thread.pk}/trace/event:7/"
    fragment = editor_client.get(url, **HTMX).content.decode()
    assert "<html" not in fragment and "get_weather" in fragment
    assert "&lt;script&gt;x()&lt;/script&gt;" in fragment and "<script>x()" not in fragment
    assert "&lt;b&gt;Rome&lt;/b&gt;" in fragment and "<b>Rome" not in fragment
    assert outsider_client.get(url).status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/trace/event:999/").status_code == 404
    assert editor_client.get(f"/threads/{thread.pk}/trace/nonsense/").status_code == 404


def test_a_run_of_another_thread_does_not_open_here(editor_client, thread, actor, session):
    from contextstore.services.sessions import thread_ensure

    event_append(thread=thread, actor=actor, events=nested_runs())
    other = thread_ensure(session=session, name="other", actor=actor)[0]
    run = Run.objects.get(run_id="plan")
    assert editor_client.get(f"/threads/{other.pk}/trace/run:{run.pk}/").status_code == 404
