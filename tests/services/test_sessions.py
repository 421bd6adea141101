import pytest

from contextstore.errors import InvalidInput
from contextstore.models import AuditLog, Event, Session, Thread
from contextstore.services.events import event_append
from contextstore.services.sessions import (
    session_archive,
    session_delete,
    session_ensure,
    thread_ensure,
    thread_ensure_by_key,
)
from contextstore.sessionspec import check_session_names
from tests.conftest import messages


def test_it_upserts_a_session_by_user_and_key(workspace, actor):
    first, created = session_ensure(workspace=workspace, key="k", user_id="u", agent="a", actor=actor)
    again, created_again = session_ensure(workspace=workspace, key="k", user_id="u", title="T",
                                          actor=actor)
    assert created and not created_again
    assert again.pk == first.pk and again.title == "T" and again.agent == "a"


def test_the_same_key_for_another_user_is_another_session(workspace, actor):
    a, _ = session_ensure(workspace=workspace, key="k", user_id="alice", actor=actor)
    b, _ = session_ensure(workspace=workspace, key="k", user_id="bob", actor=actor)
    assert a.pk != b.pk


def test_the_same_key_in_another_workspace_is_another_session(workspace, other_workspace, actor):
    a, _ = session_ensure(workspace=workspace, key="k", actor=actor)
    b, _ = session_ensure(workspace=other_workspace, key="k", actor=actor)
    assert a.pk != b.pk


@pytest.mark.parametrize(("names", "place"), [
    ({"key": ""}, "key"), ({"key": 5}, "key"), ({"key": "k" * 256}, "key"), ({"key": "a\x00b"}, "key"),
    ({"key": "k", "user_id": "u" * 256}, "user_id"), ({"key": "k", "agent": None}, "agent"),
    ({"key": "k", "title": "t" * 501}, "title"),
])
def test_a_sessions_names_out_of_shape_are_refused_by_the_doors_spec(names, place):
    # sessionspec: what importspec and OpenTelemetry's derivation check (the API's serializers
    # hold the same rules); tests/views/test_shape_doors.py sends them through the doors
    with pytest.raises(InvalidInput) as refused:
        check_session_names(**names)
    assert list(refused.value.details) == [place]


def test_it_ensures_a_thread_named_main_by_default(session, actor):
    thread, created = thread_ensure(session=session, actor=actor)
    again, created_again = thread_ensure(session=session, actor=actor)
    session.refresh_from_db()
    assert (thread.name, created, created_again, again.pk) == ("main", True, False, thread.pk)
    assert session.thread_count == 1


def test_it_ensures_session_and_thread_from_a_session_key(workspace, actor):
    thread, created = thread_ensure_by_key(workspace=workspace, session_key="chat-9", user_id="u",
                                           agent="bot", name="research", actor=actor)
    assert created and thread.session.key == "chat-9" and thread.name == "research"


def test_archive_is_audited(session, actor):
    session_archive(session=session, actor=actor)
    session.refresh_from_db()
    assert session.archived
    assert AuditLog.objects.filter(action="session.update", target_id=str(session.pk)).exists()


def test_delete_removes_everything_and_leaves_an_audit_record(session, thread, actor):
    event_append(thread=thread, events=messages(5), actor=actor)
    from contextstore.services.collapses import collapse_create

    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    session_delete(session=session, actor=actor)
    assert not Session.objects.exists() and not Thread.objects.exists() and not Event.objects.exists()
    log = AuditLog.objects.get(action="session.delete")
    assert log.details["events"] == 6 and log.workspace_id == session.workspace_id
