"""The workspace's trends page: charts with axes, a legend and a data table each, the range and
grouping chosen by link, agent names escaped, bad choices refused, other workspaces invisible."""

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.views.conftest import HTMX

XSS = "<script>alert(1)</script>"


def _calls(workspace, actor, agent: str, model: str, cost: float) -> None:
    session = session_ensure(workspace=workspace, key=f"k-{agent}-{model}", agent=agent, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "call_id": "c1", "data": {"model": model}},
        {"type": "LLMComplete", "call_id": "c1",
         "data": {"model": model, "cost": cost, "input_tokens": 1200, "output_tokens": 34}},
        {"type": "Error", "content": "boom"}])


def test_trends_draws_each_metric_per_model_and_per_agent_escaped(editor_client, workspace, other_workspace,
                                                                  actor):
    _calls(workspace, actor, XSS, XSS, 0.5)
    _calls(workspace, actor, "helpdesk", "gpt-4o", 0.25)
    _calls(other_workspace, actor, "rival-agent", "rival-model", 9)
    page = editor_client.get("/").content.decode()
    assert 'href="/trends/">Trends</a>' in page
    html = editor_client.get("/trends/").content.decode()
    for chart in ("cost", "tokens", "errors", "hit-rate", "p50", "p95"):
        assert f'data-chart="{chart}"' in html
    assert html.count('data-axis="x"') == 6 and html.count('data-axis="y"') == 6
    assert html.count('class="legend"') == 6 and html.count("<table class=\"small\">") == 6
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "rival" not in html and 'aria-current="page" data-days="30"' in html
    assert "$0.50" in html and "$0.25" in html  # the totals, costliest first
    assert html.index("$0.50") < html.index("$0.25")
    by_agent = editor_client.get("/trends/?days=7&group=agent").content.decode()
    assert "helpdesk" in by_agent and "gpt-4o" not in by_agent
    assert 'aria-current="page" data-group="agent"' in by_agent
    assert by_agent.count('<tr><th scope="row">') == 6 * 7  # a row a day in each chart's table


def test_trends_refuses_a_bad_range_and_shows_an_empty_workspace(editor_client):
    assert editor_client.get("/trends/?days=12").status_code == 400
    assert editor_client.get("/trends/?group=thread").status_code == 400
    html = editor_client.get("/trends/?days=90").content.decode()
    assert 'id="trends-empty"' in html and "no data" in html


def test_trends_needs_a_login(client):
    assert client.get("/trends/").status_code == 302


def test_the_cache_pages_show_the_hit_rate_over_every_call(editor_client, workspace, actor):
    session = session_ensure(workspace=workspace, key="cached", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMComplete", "data": {"model": "claude-sonnet-4", "input_tokens": 100,
                                         "cache_read_input_tokens": 300, "cache_creation_input_tokens": 0}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "prompt_tokens": 600,
                                         "prompt_tokens_details": {"cached_tokens": 0}}}])
    panel = editor_client.get(f"/sessions/{session.pk}/cache/", **HTMX).content.decode()
    assert 'id="cache-all" data-hit-rate="30.0"' in panel and "300 of 1,000 input tokens" in panel
    assert "2 of 2 report cache tokens" in panel
    whole = editor_client.get("/cache/").content.decode()
    assert 'id="cache-all" data-hit-rate="30.0"' in whole and 'href="/trends/">Trends</a>)' in whole
