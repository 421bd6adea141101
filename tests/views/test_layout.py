"""Layout and feedback: actors by name, skip link, keyboard-reachable timeline."""

from contextstore.services.blocks import block_upsert
from contextstore.services.common import Actor
from contextstore.services.state import state_write
from contextstore.services.workspaces import api_token_create


def test_actors_show_by_token_name_not_prefix(editor_client, thread, workspace, actor):
    token, _ = api_token_create(workspace=workspace, name="ingest-bot <b>", actor=actor)
    by_token = Actor.for_token(token)
    state_write(thread=thread, state={"a": 1}, actor=by_token, reason="agent wrote")
    block_upsert(thread=thread, name="persona", value="v1", actor=by_token)
    block_upsert(thread=thread, name="persona", value="v2", actor=by_token)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert f"token:{token.prefix}" not in html
    assert html.count("ingest-bot &lt;b&gt; (API token)") >= 3  # revision, two block versions
    diff = editor_client.get(f"/threads/{thread.pk}/state/diff/", {"a": 0, "b": 1}).content.decode()
    assert f"token:{token.prefix}" not in diff and "ingest-bot &lt;b&gt; (API token)" in diff


def test_pages_have_a_skip_link_and_a_focusable_timeline(editor_client, thread):
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert '<a class="skip-link" href="#timeline-scroll">Skip to the timeline</a>' in html
    assert '<div id="timeline-scroll" tabindex="-1" role="region" aria-label="Timeline"' in html
    assert 'data-max-rows="300"' in html
    sessions = editor_client.get("/").content.decode()
    assert '<a class="skip-link" href="#main">' in sessions and '<main id="main"' in sessions


def test_the_budget_is_capped_at_the_context_window_and_the_gauge_says_over(editor_client, thread, actor):
    from contextstore.models import Thread
    from contextstore.services.events import event_append
    from tests.conftest import messages

    Thread.objects.filter(pk=thread.pk).update(context_window=1000)
    html = editor_client.get(f"/threads/{thread.pk}/context/", {"budget": 500_000}).content.decode()
    assert 'name="budget" value="1000"' in html
    event_append(thread=thread, actor=actor, events=messages(40, words=60))
    page = editor_client.get(f"/threads/{thread.pk}/", {"budget": 100}).content.decode()
    assert "tokens · over budget</span>" in page and "history (over)" in page
    assert "%</span></h2>" not in page.split('id="gauge"')[0][-300:]


def test_reset_is_explained_without_assuming_clientai(editor_client, thread):
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "starts the agent's working state over" in html
    assert "(For clientai agents this is <code>clear()</code>.)" in html


def test_the_live_tail_brings_the_header_counters_and_gauge_along(editor_client, thread, actor):
    from contextstore.services.events import event_append
    from tests.conftest import messages
    from tests.views.conftest import HTMX

    event_append(thread=thread, actor=actor, events=messages(3))
    quiet = editor_client.get(f"/threads/{thread.pk}/", {"after": 3}, **HTMX).content.decode()
    assert "hx-swap-oob" not in quiet  # nothing new: nothing else to redraw
    event_append(thread=thread, actor=actor, events=messages(2, start=3))
    html = editor_client.get(f"/threads/{thread.pk}/", {"after": 3}, **HTMX).content.decode()
    assert '<div class="stats" id="thread-stats" hx-swap-oob="true">' in html
    assert "<b>5</b> events" in html and '<div id="gauge-box" hx-swap-oob="true">' in html


def test_every_page_lists_the_persons_workspaces_in_the_switcher_and_no_other(
        editor_client, editor, thread, workspace, other_workspace, actor):
    from contextstore.models import Membership
    from contextstore.services.runs import run_start
    from contextstore.services.workspaces import workspace_ensure

    second = workspace_ensure(slug="beta", name="Beta lab")[0]
    Membership.objects.create(workspace=second, user=editor, role=Membership.Role.VIEWER)
    run_start(thread=thread, run_id="run-1", actor=actor)
    pages = ["/", f"/sessions/{thread.session_id}/", f"/sessions/{thread.session_id}/cache/", "/cache/",
             "/trends/", "/datasets/", f"/threads/{thread.pk}/", f"/threads/{thread.pk}/activity/",
             f"/threads/{thread.pk}/context/", f"/threads/{thread.pk}/export/size/",
             f"/sessions/{thread.session_id}/comments/", f"/sessions/{thread.session_id}/scores/",
             f"/threads/{thread.pk}/runs/run-1/spans/"]
    for url in pages:
        response = editor_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert 'id="ws-switch"' in html, url
        assert '<option value="acme" selected>Acme</option>' in html, url
        assert '<option value="beta">Beta lab</option>' in html, url
        assert "Rival" not in html, url
