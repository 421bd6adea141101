"""services/comments.py and services/scores.py: targets, validation (nothing written on bad
input), who may change a comment, the audit rows, and what an erasure takes with a person."""

import math

import pytest
from django.contrib.auth import get_user_model

from contextstore.annotationspec import check_score, comment_text
from contextstore.errors import Forbidden, InvalidInput, NotFound
from contextstore.models import AuditLog, Comment, Membership, Score
from contextstore.selectors.scores import comment_counts, parse_score_filter, sessions_scored
from contextstore.services.comments import comment_add, comment_delete, comment_edit
from contextstore.services.common import Actor
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.scores import score_add
from contextstore.services.sessions import session_ensure, thread_ensure

CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMComplete", "data": {"model": "m"}}]


def person(workspace, name: str, role: str):
    user = get_user_model().objects.create_user(name, password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=role)
    return Actor.for_user(user)


def test_comments_on_a_session_and_an_event_edit_and_delete_by_the_author_or_an_admin(
        workspace, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    ann, bob = person(workspace, "ann", "editor"), person(workspace, "bob", "editor")
    boss = person(workspace, "boss", "admin")
    on_session = comment_add(session=session, text="  looks *fine*  ", actor=ann)
    on_call = comment_add(session=session, thread=thread, seq=2, text="slow call", actor=bob)
    assert (on_session.thread, on_session.seq, on_session.text) == (None, None, "looks *fine*")
    assert comment_counts(thread=thread, seqs=[1, 2, 3]) == {2: 1}
    with pytest.raises(Forbidden):
        comment_edit(comment=on_session, text="hijacked", actor=bob)
    with pytest.raises(Forbidden):
        comment_delete(comment=on_session, actor=actor)  # a token or the system is no author
    comment_edit(comment=on_session, text="looks good", actor=ann)
    on_session.refresh_from_db()
    assert on_session.text == "looks good" and on_session.edited_at is not None
    comment_delete(comment=on_call, actor=boss)  # an admin tidies up
    assert list(Comment.objects.values_list("pk", flat=True)) == [on_session.pk]
    actions = list(AuditLog.objects.filter(target_type="comment").order_by("id")
                   .values_list("action", "details"))
    assert [a for a, _ in actions] == ["comment.add", "comment.add", "comment.edit", "comment.delete"]
    assert all("looks" not in str(d) for _, d in actions)  # lengths, never the text


@pytest.mark.parametrize("text", ["", "   ", "x" * 10_001, "a\x00b", 5])
def test_bad_comment_texts_are_refused_by_the_one_definition_every_door_checks(text):
    with pytest.raises(InvalidInput):
        comment_text(text)  # the dashboard's add and edit (tests/views/test_comments_scores.py)


def test_a_comment_on_no_such_event_is_refused_and_writes_nothing(workspace, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    with pytest.raises(NotFound):
        comment_add(session=session, actor=actor, text="ok", seq=99, thread=thread)
    assert not Comment.objects.exists() and not AuditLog.objects.filter(target_type="comment").exists()


def test_another_sessions_thread_is_no_target(workspace, session, thread, actor):
    other = session_ensure(workspace=workspace, key="other", actor=actor)[0]
    with pytest.raises(NotFound):
        comment_add(session=other, thread=thread, seq=1, text="x", actor=actor)


def test_scores_of_each_type_and_on_a_call_named_by_either_of_its_events(
        workspace, session, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    a = score_add(session=session, name="accuracy", data_type="numeric", value=0.75, actor=actor)
    b = score_add(session=session, name="helpful", data_type="boolean", value=True, actor=actor,
                  comment="yes")
    c = score_add(session=session, thread=thread, seq=3, name="tone", data_type="categorical",
                  value="friendly", actor=actor)
    assert (a.value, a.string_value, a.display) == (0.75, "", "0.75")
    assert (b.value, b.string_value) == (1.0, "true")
    assert (c.thread_id, c.seq, c.value, c.string_value) == (thread.pk, 2, None, "friendly")
    assert AuditLog.objects.filter(action="score.add").count() == 3
    with pytest.raises(NotFound):  # a message is no LLM call
        score_add(session=session, thread=thread, seq=1, name="x", data_type="boolean", value=True,
                  actor=actor)


@pytest.mark.parametrize("data_type, value", [
    ("numeric", math.nan), ("numeric", math.inf), ("numeric", -math.inf), ("numeric", "0.5"),
    ("numeric", True), ("categorical", ""), ("categorical", "  "), ("categorical", 3),
    ("boolean", 1), ("boolean", "true"), ("ordinal", 1), ("numeric", None),
])
def test_bad_score_values_are_refused_by_the_one_definition_every_door_checks(data_type, value):
    # the API and the dashboard answer it as a 400 (tests/api/test_scores.py, tests/views)
    with pytest.raises(InvalidInput):
        check_score(name="q", data_type=data_type, value=value)
    for name in ("", "a:b", "x" * 101, None):
        with pytest.raises(InvalidInput):
            check_score(name=name, data_type="numeric", value=1)


def test_the_score_filter(workspace, session, actor):
    other = session_ensure(workspace=workspace, key="other", actor=actor)[0]
    score_add(session=session, name="accuracy", data_type="numeric", value=0.9, actor=actor)
    score_add(session=other, name="accuracy", data_type="numeric", value=0.2, actor=actor)
    score_add(session=other, name="ok", data_type="boolean", value=False, actor=actor)
    score_add(session=session, name="tone", data_type="categorical", value="warm", actor=actor)

    def found(raw: str) -> set[str]:
        qs = workspace.sessions.all()
        return set(sessions_scored(qs, workspace_id=workspace.pk, score=parse_score_filter(raw))
                   .values_list("key", flat=True))

    assert found("accuracy:>=0.5") == {session.key}
    assert found("accuracy:<0.5") == {"other"}
    assert found("accuracy") == {session.key, "other"}
    assert found("ok:false") == {"other"} and found("ok:true") == set()
    assert found("tone:warm") == {session.key} and found("tone:=cold") == set()
    for bad in ("", ":1", "accuracy:", "tone:>warm", "accuracy:>nan"):
        with pytest.raises(InvalidInput):
            parse_score_filter(bad)


def test_an_erasure_takes_the_comments_and_scores_on_the_persons_sessions(workspace, actor):
    ann = session_ensure(workspace=workspace, key="s1", user_id="ann", actor=actor)[0]
    bob = session_ensure(workspace=workspace, key="s2", user_id="bob", actor=actor)[0]
    thread = thread_ensure(session=ann, name="main", actor=actor)[0]
    event_append(thread=thread, actor=actor, events=CALL)
    editor = person(workspace, "eve", "editor")
    comment_add(session=ann, text="ann said her address is…", actor=editor)
    comment_add(session=ann, thread=thread, seq=2, text="on the call", actor=editor)
    score_add(session=ann, thread=thread, seq=2, name="q", data_type="numeric", value=1, actor=actor)
    kept = comment_add(session=bob, text="bob's", actor=editor)
    receipt = user_erase(workspace=workspace, user_id="ann", actor=actor)
    assert receipt["counts"]["comments"] == 2 and receipt["counts"]["scores"] == 1
    assert list(Comment.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not Score.objects.exists()
    left = AuditLog.objects.filter(target_type__in=("comment", "score")).exclude(target_id=str(kept.pk))
    assert left.count() == 3 and all(row.details == {"erased": True} for row in left)
