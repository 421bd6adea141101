"""Share links, datasets and the activity log in the dashboard."""

import json
import re
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from contextstore.models import Dataset, ShareLink
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor
from contextstore.services.datasets import dataset_add_range
from contextstore.services.events import event_append
from contextstore.services.sharing import share_link_create

XSS = "<img src=x onerror=alert(1)>"


def _chat(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"hi {XSS}"},
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "hello", "data": {"model": "m"}},
    ])


def _new_link(client, session) -> str:
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    return re.search(r'value="(http[^"]+/share/[^"]+/)"', page).group(1)


def test_an_editor_shares_a_session_and_anyone_reads_it_without_write_controls(
        editor_client, session, thread, actor):
    _chat(thread, actor)
    response = editor_client.post(f"/sessions/{session.pk}/shares/",
                                  {"kind": "session", "expires": "7d"})
    assert response.status_code == 302
    url = _new_link(editor_client, session)
    assert "/share/" not in editor_client.get(f"/sessions/{session.pk}/").content.decode()  # shown once
    anonymous = Client()
    page = anonymous.get(f"{url}?thread={thread.pk}")
    html = page.content.decode()
    assert page.status_code == 200 and page["Referrer-Policy"] == "no-referrer"
    assert "read-only" in html and "hi &lt;img" in html and XSS not in html
    for control in ("<form", "csrfmiddlewaretoken", "Collapse", "Revoke", "/threads/"):
        assert control not in html, control


def test_an_event_link_shows_its_thread_only_and_a_revoked_one_is_gone(
        editor_client, session, thread, actor, workspace, editor):
    _chat(thread, actor)
    editor_client.post(f"/sessions/{session.pk}/shares/",
                       {"kind": "event", "thread": thread.pk, "seq": "1", "expires": "1h"})
    url = _new_link(editor_client, session)
    html = Client().get(url).content.decode()
    assert 'id="e1"' in html and 'class="event' in html
    assert Client().get(f"{url}?thread={thread.pk}").content.decode().count("<article") == 3
    link = ShareLink.objects.get()
    assert editor_client.post(f"/sessions/{session.pk}/shares/{link.pk}/revoke/").status_code == 302
    gone = Client().get(url)
    assert gone.status_code == 410 and "revoked" in gone.content.decode()
    assert Client().get("/share/nothing-here/").status_code == 404


def test_a_call_card_shares_its_call(editor_client, viewer_client, session, thread, actor):
    _chat(thread, actor)
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert f'action="/sessions/{session.pk}/shares/"' in page
    assert "Create link" not in viewer_client.get(f"/threads/{thread.pk}/").content.decode()
    editor_client.post(f"/sessions/{session.pk}/shares/",
                       {"kind": "call", "thread": thread.pk, "seq": "3", "expires": "1d"})
    html = Client().get(_new_link(editor_client, session)).content.decode()
    assert 'id="shared-call"' in html and "hello" in html


def test_a_shared_call_reads_as_a_chat_ending_with_its_newest_messages_and_its_reply(session, thread, actor,
                                                                                       user):
    """A long request shows its system prompt, then its newest messages down to the one that
    made the call (not its oldest 200), as text; the reply logged after the call below it."""
    sent = [{"role": "system", "content": "Be brief."}] + [
        {"role": "user" if i % 2 else "assistant", "content": [{"type": "text", "text": f"turn {i}"}]}
        for i in range(1, 252)] + [{"role": "user", "content": f"the last question {XSS}"}]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "messages": sent}},
        {"type": "LLMOutput", "role": "assistant", "content": "the answer"},
        {"type": "LLMComplete", "data": {"model": "m"}}])
    _, raw = share_link_create(session=session, kind="call", thread=thread, seq=1, actor=Actor.for_user(user))
    html = Client().get(f"/share/{raw}/").content.decode()
    assert html.index("Be brief.") < html.index("52 older messages not shown") < html.index(">turn 53<")
    assert ">turn 52<" not in html and "the last question &lt;img" in html and XSS not in html
    assert html.index("the last question") < html.index("the answer")
    assert "json-tree" not in html[:html.index("<h3>Answer</h3>")]  # no JSON trees of content blocks


def test_an_expired_link_answers_410(session, thread, actor, user):
    _chat(thread, actor)
    _, raw = share_link_create(session=session, kind="call", thread=thread, seq=3,
                               actor=Actor.for_user(user), now=timezone.now() - timedelta(days=2))
    response = Client().get(f"/share/{raw}/")
    assert response.status_code == 410 and "expired" in response.content.decode()


def test_a_viewer_cannot_share_or_revoke_and_another_workspace_sees_nothing(
        viewer_client, outsider_client, session, thread, actor, user):
    _chat(thread, actor)
    assert viewer_client.post(f"/sessions/{session.pk}/shares/", {"kind": "session",
                                                                  "expires": "1d"}).status_code == 403
    link, _ = share_link_create(session=session, kind="session", actor=Actor.for_user(user))
    assert viewer_client.post(f"/sessions/{session.pk}/shares/{link.pk}/revoke/").status_code == 403
    page = viewer_client.get(f"/sessions/{session.pk}/").content.decode()
    assert link.prefix in page and "Create read-only link" not in page
    assert outsider_client.post(f"/sessions/{session.pk}/shares/",
                                {"kind": "session", "expires": "1d"}).status_code == 404
    dataset = dataset_add_range(dataset_name="d", thread=thread, start_position=1, end_position=1,
                                actor=actor).dataset
    assert outsider_client.get(f"/datasets/{dataset.pk}/").status_code == 404
    assert outsider_client.get(f"/datasets/{dataset.pk}/items.jsonl").status_code == 404
    assert "No datasets yet" in outsider_client.get("/datasets/").content.decode()
    assert viewer_client.post(f"/threads/{thread.pk}/calls/3/dataset/", {"dataset": "x"}).status_code == 403
    assert ShareLink.objects.count() == 1 and Dataset.objects.count() == 1


def test_a_bad_share_request_says_why_and_makes_nothing(editor_client, session):
    editor_client.post(f"/sessions/{session.pk}/shares/", {"kind": "call", "expires": "1d"})
    page = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'id="share-error"' in page and not ShareLink.objects.exists()


def test_an_editor_adds_a_call_and_downloads_the_jsonl(editor_client, thread, actor):
    _chat(thread, actor)
    response = editor_client.post(f"/threads/{thread.pk}/calls/3/dataset/", {"dataset": "evals"})
    dataset = Dataset.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/datasets/{dataset.pk}/"
    assert "evals" in editor_client.get("/datasets/").content.decode()
    assert "Export JSONL" in editor_client.get(f"/datasets/{dataset.pk}/").content.decode()
    export = editor_client.get(f"/datasets/{dataset.pk}/items.jsonl")
    assert export["Content-Disposition"] == 'attachment; filename="evals.jsonl"'
    lines = b"".join(export.streaming_content).decode().splitlines()
    assert [json.loads(line)["expected_output"] for line in lines] == [
        {"role": "assistant", "content": "hello"}]
    bad = editor_client.post(f"/threads/{thread.pk}/dataset/", {"dataset": "evals"})
    assert bad.status_code == 400 and Dataset.objects.get().item_count == 1


def test_the_activity_tab_reads_as_sentences(editor_client, viewer_client, outsider_client, thread,
                                             actor, editor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "x"} for _ in range(4)])
    collapse_create(thread=thread, start_position=1, end_position=3, summary_text="s",
                    actor=Actor.for_user(editor))
    html = viewer_client.get(f"/threads/{thread.pk}/activity/").content.decode()
    assert "<b>eddie</b> collapsed 3 events into a summary" in html
    assert f'href="/threads/{thread.pk}/?from=1&amp;to=3&amp;around=1#e1">#1–#3</a>' in html
    assert outsider_client.get(f"/threads/{thread.pk}/activity/").status_code == 404
    assert f"/threads/{thread.pk}/activity/" in editor_client.get(f"/threads/{thread.pk}/").content.decode()
