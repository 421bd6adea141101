"""A run's trace in the browser: from a real OTLP export (the OpenTelemetry SDK and its
OTLP/HTTP exporter) and from runs recorded through the API, the run page nests agent →
sub-agent → LLM call / tool call; opening a node shows its attributes and events; axe finds
nothing on the page, a node open."""

import json

import pytest
from playwright.sync_api import expect

from contextstore.models import Run, Thread
from contextstore.services.events import event_append
from tests.browser.conftest import axe_violations, screenshot
from tests.otlp.emitters import exporting_provider
from tests.views.test_trace_tree import nested_runs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def span_id(span) -> str:
    return format(span.get_span_context().span_id, "016x")


def test_a_trace_exported_over_otlp_opens_as_a_tree(page, live_server, token, eager_tasks):
    provider = exporting_provider(live_server.url, token[1], "trip-agent")
    tracer = provider.get_tracer("tests.trace_tree")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-tree-browser"}
    with tracer.start_as_current_span(
        "invoke_agent planner", attributes={**agent, "gen_ai.agent.name": "planner"}
    ):
        with tracer.start_as_current_span(
            "invoke_agent researcher", attributes={**agent, "gen_ai.agent.name": "researcher"}
        ) as sub:
            messages = [{"role": "user", "parts": [{"type": "text", "content": "Weather in <b>Rome</b>?"}]}]
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.request.temperature": 0.2,
                    "gen_ai.input.messages": json.dumps(messages),
                },
            ):
                pass
            with tracer.start_as_current_span(
                "execute_tool get_weather",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": "call_1",
                    "gen_ai.tool.call.arguments": '{"city": "Rome"}',
                },
            ) as tool:
                tool.add_event("weather.lookup", {"station": "<i>LIRF</i>"})
    provider.shutdown()  # flushes the batch: one export
    thread = Thread.objects.get()
    run = Run.objects.get(run_id=span_id(sub))

    page.goto(f"/threads/{thread.pk}/runs/{run.run_id}/spans/")
    tree = page.locator("#trace-tree")
    expect(tree.locator("[data-node]")).to_have_count(4)
    assert [
        (n.get_attribute("data-kind"), n.get_attribute("data-depth"))
        for n in tree.locator("[data-node]").all()
    ] == [("agent", "0"), ("agent", "1"), ("llm", "2"), ("tool", "2")]
    expect(tree.locator("[data-current]")).to_contain_text("invoke_agent researcher")
    node = tree.locator(f'[data-node="span:{span_id(tool)}"]')
    node.locator("summary").click()
    body = node.locator(".trace-detail")
    expect(body).to_contain_text("gen_ai.tool.name")
    expect(body).to_contain_text("get_weather")
    expect(body).to_contain_text("weather.lookup")
    expect(body).to_contain_text("<i>LIRF</i>")  # agent text stays text
    expect(body.locator("i")).to_have_count(0)
    screenshot(page, "trace-tree-otlp")
    assert axe_violations(page) == []
    assert page.problems == []


def test_a_run_recorded_through_the_api_opens_as_a_tree(page, thread, actor):
    event_append(thread=thread, actor=actor, events=nested_runs())
    page.goto(f"/threads/{thread.pk}/runs/plan/spans/")
    tree = page.locator("#trace-tree")
    expect(tree.locator("[data-node]")).to_have_count(6)
    assert [
        (n.get_attribute("data-kind"), n.get_attribute("data-depth"))
        for n in tree.locator("[data-node]").all()
    ] == [("agent", "0"), ("llm", "1"), ("agent", "1"), ("llm", "2"), ("tool", "2"), ("llm", "1")]
    sub = tree.locator(f'[data-node="run:{Run.objects.get(run_id="research").pk}"]')
    sub.locator("summary").click()
    expect(sub.locator(".trace-detail")).to_contain_text("agent call: parent_run_id")
    tool = tree.locator('[data-node="event:7"]')
    tool.locator("summary").click()
    expect(tool.locator(".trace-detail")).to_contain_text("ToolResult #9")
    expect(tool.locator(".trace-detail")).to_contain_text("sunny <script>x()</script>")
    screenshot(page, "trace-tree-api")
    assert axe_violations(page) == []
    # without script the node's link opens it as a page of its own
    page.goto(f"/threads/{thread.pk}/trace/event:7/")
    expect(page.locator("h1")).to_have_text("ToolCall")
    assert axe_violations(page) == []
    assert page.problems == []
