"""Comments and scores in the dashboard: the session page's panels, an event's and a call's
comments (page and htmx fragment), the count badge, escaping, who may change what, and the
session list's score filter."""

from contextstore.models import Comment, Score
from contextstore.services.comments import comment_add
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.scores import score_add
from contextstore.services.sessions import session_ensure
from tests.views.conftest import HTMX

XSS = "<script>alert(1)</script>"
CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMComplete", "data": {"model": "m"}}]


def test_session_comments_and_scores_from_the_page(editor_client, editor, session):
    url = f"/sessions/{session.pk}/"
    r = editor_client.post(f"{url}comments/", {"text": f"see **this** {XSS}"}, **HTMX)
    assert r.status_code == 200 and "<strong>this</strong>" in r.content.decode()
    assert XSS not in r.content.decode() and "&lt;script&gt;" in r.content.decode()
    r = editor_client.post(f"{url}scores/", {"name": "accuracy", "data_type": "numeric",
                                             "value": "0.7", "comment": ""}, **HTMX)
    assert r.status_code == 200 and 'data-score="accuracy"' in r.content.decode()
    r = editor_client.post(f"{url}scores/", {"name": "q", "data_type": "numeric", "value": "nan"}, **HTMX)
    assert r.status_code == 400 and "finite" in r.content.decode()
    r = editor_client.post(f"{url}scores/", {"name": "ok", "data_type": "boolean", "value": "maybe"})
    assert r.status_code == 400 and "true or false" in r.content.decode()
    assert Score.objects.count() == 1
    page = editor_client.get(url).content.decode()
    for text in ('id="comments-session"', "<strong>this</strong>", 'data-score="accuracy"', "0.7",
                 'name="data_type"', "Add a comment"):
        assert text in page, text
    comment = Comment.objects.get()
    r = editor_client.post(f"/comments/{comment.pk}/edit/", {"text": "edited"}, **HTMX)
    assert r.status_code == 200 and "edited" in r.content.decode()
    r = editor_client.post(f"/comments/{comment.pk}/delete/")
    assert r.status_code == 302 and not Comment.objects.exists()


def test_event_and_call_comments_with_their_badge(editor_client, editor, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    r = editor_client.post(f"/threads/{thread.pk}/events/2/comments/", {"text": "slow call"}, **HTMX)
    assert r.status_code == 200 and 'id="comments-e2"' in r.content.decode()
    editor_client.post(f"/threads/{thread.pk}/events/1/comments/", {"text": "odd ask"})
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    card = page[page.index('data-call="2"'):]
    card = card[:card.index("</article>")]
    assert "data-call-comments" in card and 'comment-count">1<' in card
    event = page[page.index('id="e1"'):]
    assert '1 comment</span>' in event[:event.index("</article>")]
    full = editor_client.get(f"/threads/{thread.pk}/events/2/comments/").content.decode()
    assert "slow call" in full and "Comments on event #2" in full
    assert editor_client.get(f"/threads/{thread.pk}/events/9/comments/").status_code == 404


def test_viewers_read_but_cannot_write_and_outsiders_see_nothing(
        viewer_client, outsider_client, editor_client, editor, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    mine = comment_add(session=session, text="mine", actor=Actor.for_user(editor))
    assert "mine" in viewer_client.get(f"/sessions/{session.pk}/comments/").content.decode()
    assert viewer_client.post(f"/sessions/{session.pk}/comments/", {"text": "x"}).status_code == 403
    assert viewer_client.post(f"/sessions/{session.pk}/scores/",
                              {"name": "q", "data_type": "numeric", "value": "1"}).status_code == 403
    assert viewer_client.post(f"/comments/{mine.pk}/delete/", **HTMX).status_code == 403
    for url in (f"/sessions/{session.pk}/comments/", f"/threads/{thread.pk}/events/1/comments/",
                f"/sessions/{session.pk}/scores/"):
        assert outsider_client.get(url).status_code == 404
    assert outsider_client.post(f"/comments/{mine.pk}/delete/").status_code == 404
    assert Comment.objects.count() == 1 and not Score.objects.exists()


def test_the_session_list_filters_by_score(editor_client, workspace, session, actor):
    other = session_ensure(workspace=workspace, key="other-one", actor=actor)[0]
    score_add(session=session, name="accuracy", data_type="numeric", value=0.9, actor=actor)
    score_add(session=other, name="accuracy", data_type="numeric", value=0.1, actor=actor)
    html = editor_client.get("/?score=accuracy:>=0.5").content.decode()
    assert session.key in html and "other-one" not in html
    html = editor_client.get("/?score=accuracy:<0.5", **HTMX).content.decode()
    assert "other-one" in html and f">{session.key}<" not in html
    r = editor_client.get("/?score=accuracy:>high")
    assert r.status_code == 400 and "needs a finite number" in r.content.decode()
