"""The dashboard's annotation queues: score configs page, queues, adding from the session page,
a call card and the session list's filter, the review loop with the form made from the
queue's configs (checked against them: a clear 400), the session page's score form checked
against a configured name, escaping, and another workspace's a 404."""

import pytest
from django.test import Client

from contextstore.annotationspec import score_config_fields
from contextstore.models import AnnotationItem, Score
from contextstore.services import annotation as service
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure

CALL = [{"type": "Message", "role": "user", "content": "<b>hi</b>"},
        {"type": "LLMCallStart",
         "data": {"model": "m", "messages": [{"role": "user", "content": "<script>x()</script>"}]}},
        {"type": "LLMComplete", "data": {"model": "m"}, "content": "hello"}]


@pytest.fixture
def configs(workspace, actor):
    return [service.score_config_create(workspace=workspace, actor=actor, **score_config_fields(**f))
            for f in ({"name": "accuracy", "data_type": "numeric", "min_value": 0, "max_value": 1},
                      {"name": "tone", "data_type": "categorical", "categories": ["<i>kind</i>", "curt"]})]


@pytest.fixture
def queue(workspace, actor, configs):
    return service.queue_create(workspace=workspace, actor=actor, name="<em>triage</em>", configs=configs)


def test_configs_and_queues_are_made_in_the_dashboard(editor_client, workspace):
    answer = editor_client.post("/score-configs/", {"name": "helpful", "data_type": "boolean"})
    assert answer.status_code == 302
    bad = editor_client.post("/score-configs/", {"name": "n", "data_type": "numeric",
                                                 "min_value": "5", "max_value": "1"})
    assert bad.status_code == 400 and b"min_value is greater than max_value" in bad.content
    from contextstore.models import ScoreConfig
    config = ScoreConfig.objects.get(name="helpful")
    made = editor_client.post("/queues/", {"name": "q1", "score_configs": [str(config.pk)]})
    assert made.status_code == 302
    assert editor_client.post("/queues/", {"name": "q2"}).status_code == 400
    page = editor_client.get("/queues/").content.decode()
    assert 'data-queue="q1"' in page


def test_the_session_page_score_form_is_checked_against_the_config(editor_client, session, configs):
    answer = editor_client.post(f"/sessions/{session.pk}/scores/",
                                {"name": "accuracy", "data_type": "numeric", "value": "4"})
    assert answer.status_code == 400 and b"at most 1" in answer.content
    answer = editor_client.post(f"/sessions/{session.pk}/scores/",
                                {"name": "tone", "data_type": "categorical", "value": "rude"})
    assert answer.status_code == 400
    assert Score.objects.count() == 0


def test_adding_from_the_session_page_a_call_card_and_the_lists_filter(
        editor_client, workspace, session, thread, actor, queue):
    event_append(thread=thread, actor=actor, events=CALL)
    for i in range(3):
        session_ensure(workspace=workspace, key=f"bulk-{i}", agent="bulky", actor=actor)
    assert 'name="queue"' in editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/queues/add/?thread={thread.pk}&amp;seq=2"' in editor_client.get(
        f"/threads/{thread.pk}/").content.decode()
    asked = editor_client.get(f"/queues/add/?thread={thread.pk}&seq=2").content.decode()
    assert 'name="seq" value="2"' in asked and "from_list" not in asked
    assert editor_client.post("/queues/add/", {"queue": queue.pk, "session": session.pk}).status_code == 302
    on_call = {"queue": queue.pk, "thread": thread.pk, "seq": 3}
    assert editor_client.post("/queues/add/", on_call).status_code == 302
    listing = editor_client.get("/?agent=bulky").content.decode()
    assert 'id="list-to-queue"' in listing and "/queues/add/?agent=bulky" in listing
    form = editor_client.get("/queues/add/?agent=bulky").content.decode()
    assert 'name="agent" value="bulky"' in form
    assert editor_client.post("/queues/add/", {"queue": queue.pk, "from_list": "1",
                                               "agent": "bulky"}).status_code == 302
    assert list(AnnotationItem.objects.order_by("rank").values_list("kind", "seq")) == [
        ("session", None), ("call", 2), ("session", None), ("session", None), ("session", None)]


def test_reviewing_a_call_shows_what_it_sent_escaped_and_completes_with_the_form(
        editor_client, editor, thread, actor, queue, configs):
    event_append(thread=thread, actor=actor, events=CALL)
    service.queue_add_items(queue=queue, actor=actor, targets=[(thread.session, thread, 2)])
    start = editor_client.post(f"/queues/{queue.pk}/next/")
    item = AnnotationItem.objects.get()
    assert start.status_code == 302 and start["Location"] == f"/queues/{queue.pk}/items/{item.pk}/"
    page = editor_client.get(start["Location"]).content.decode()
    assert "&lt;script&gt;x()&lt;/script&gt;" in page and "<script>x()" not in page
    assert "&lt;em&gt;triage&lt;/em&gt;" in page and "<em>triage" not in page
    assert 'data-sent="2"' in page  # call_sent.html's own partial
    accuracy, tone = configs
    bad = editor_client.post(f"/queues/{queue.pk}/items/{item.pk}/complete/",
                             {f"score-{accuracy.pk}": "1.5"})
    assert bad.status_code == 400 and b"at most 1" in bad.content
    empty = editor_client.post(f"/queues/{queue.pk}/items/{item.pk}/complete/", {})
    assert empty.status_code == 400
    done = editor_client.post(f"/queues/{queue.pk}/items/{item.pk}/complete/",
                              {f"score-{accuracy.pk}": "0.75", f"score-{tone.pk}": "<i>kind</i>",
                               "comment": "fine"})
    assert done.status_code == 302 and done["Location"] == f"/queues/{queue.pk}/"
    assert sorted(Score.objects.values_list("name", "value", "string_value", "seq", "author_user")) == [
        ("accuracy", 0.75, "", 2, editor.pk), ("tone", None, "<i>kind</i>", 2, editor.pk)]
    detail = editor_client.get(done["Location"]).content.decode()
    assert 'id="queue-complete"' in detail and "Queue complete" in detail


def test_viewers_review_nothing_and_outsiders_see_nothing(viewer_client, outsider, queue, session, actor):
    service.queue_add_items(queue=queue, actor=actor, targets=[(session, None, None)])
    item = AnnotationItem.objects.get()
    assert viewer_client.get(f"/queues/{queue.pk}/").status_code == 200
    assert viewer_client.post(f"/queues/{queue.pk}/next/").status_code == 403
    other = Client()
    other.force_login(outsider)
    for url in (f"/queues/{queue.pk}/", f"/queues/{queue.pk}/items/{item.pk}/"):
        assert other.get(url).status_code == 404
    assert other.post(f"/queues/{queue.pk}/next/").status_code == 404
    assert other.post("/queues/add/", {"queue": queue.pk, "session": session.pk}).status_code == 404


def test_a_session_of_another_workspace_is_not_added_even_by_a_member_of_both(
        editor_client, editor, other_workspace, actor, queue):
    from contextstore.models import Membership
    Membership.objects.create(workspace=other_workspace, user=editor, role=Membership.Role.EDITOR)
    theirs = session_ensure(workspace=other_workspace, key="theirs", actor=actor)[0]
    answer = editor_client.post("/queues/add/", {"queue": queue.pk, "session": theirs.pk})
    assert answer.status_code == 404
    assert AnnotationItem.objects.count() == 0
