"""db.PreparedGet with string values and db.insert_sql's ON CONFLICT DO UPDATE (the commit path's
compiled-once SQL) give what the ORM gives."""

import pytest
from django.db import connection
from django.db.models import Subquery

from contextstore.db import PreparedGet, insert_sql
from contextstore.models import Event, Session, ThreadBlob
from contextstore.services.sessions import session_ensure

BY_IDENTITY = PreparedGet(lambda workspace_id, app, user_id, key: Session.objects.filter(
    workspace_id=workspace_id, app=app, user_id=user_id, key=key), text=(1, 2, 3))


def test_string_values_find_what_the_orm_finds(workspace, other_workspace, actor):
    odd = ["", "it's 100%", "%s", "naïve/ключ", "a\\b"]
    for key in odd:
        session_ensure(workspace=workspace, key=key or "-", user_id=key, actor=actor)
    session_ensure(workspace=other_workspace, key="%s", user_id="%s", actor=actor)
    for key in odd:
        found = BY_IDENTITY.get(workspace.pk, "", key, key or "-")
        assert found == Session.objects.get(workspace=workspace, user_id=key, key=key or "-")
    assert BY_IDENTITY.get(workspace.pk, "", "%s", "missing") is None
    assert BY_IDENTITY.get(workspace.pk, "other app", "", "-") is None


def test_a_value_used_twice_fills_each_of_its_places(workspace, other_workspace, actor):
    # the workspace and the key both in the row's filter and in a subquery's
    named = PreparedGet(lambda workspace_id, key: Session.objects.filter(workspace_id=workspace_id, key=key)
                        .annotate(twin=Subquery(Session.objects.filter(
                            workspace_id=workspace_id, key=key, user_id="twin").values("pk")[:1])),
                        text=(1,))
    mine = session_ensure(workspace=workspace, key="k", actor=actor)[0]
    twin = session_ensure(workspace=workspace, key="k", user_id="twin", actor=actor)[0]
    session_ensure(workspace=other_workspace, key="k", user_id="twin", actor=actor)
    found = {s.pk: s.twin for s in named.all(workspace.pk, "k")}
    assert found == {mine.pk: twin.pk, twin.pk: twin.pk}
    assert named.all(other_workspace.pk, "other") == []


def test_an_upsert_overwrites_by_key_and_inserts_the_rest(thread):
    def upsert(rows: dict[str, bytes]) -> None:
        text, params = insert_sql(ThreadBlob, [
            ThreadBlob(thread=thread, key=key, data=data, meta={"n": len(data)}, size=len(data))
            for key, data in rows.items()], returning=("id",),
            update_conflicts=(("thread", "key"), ("data", "meta", "size", "updated_at")))
        with connection.cursor() as cursor:
            cursor.execute(text, params)

    upsert({"a": b"1"})
    upsert({"a": b"22", "b": b"333"})  # several rows: another shape of the statement
    upsert({"b": b""})
    got = {b.key: (bytes(b.data), b.meta, b.size) for b in ThreadBlob.objects.filter(thread=thread)}
    assert got == {"a": (b"22", {"n": 2}, 2), "b": (b"", {"n": 0}, 0)}


def test_many_rows_with_bytes_go_as_one_statement_text_whatever_their_number(thread):
    def upsert(count: int) -> str:
        rows = [ThreadBlob(thread=thread, key=f"k{i}", data=bytes([i, 0, 255]) * i, meta=None,
                           size=3 * i) for i in range(count)]
        text, params = insert_sql(ThreadBlob, rows, returning=("id",), update_conflicts=(
            ("thread", "key"), ("data", "meta", "size", "updated_at")))
        with connection.cursor() as cursor:
            cursor.execute(text, params)
        return text

    texts = {upsert(count) for count in (2, 5, 30)}
    got = {b.key: bytes(b.data) for b in ThreadBlob.objects.filter(thread=thread)}
    assert got == {f"k{i}": bytes([i, 0, 255]) * i for i in range(30)}
    assert len(texts) == (1 if connection.vendor == "postgresql" else 3)  # UNNEST's arrays


def test_a_column_left_out_of_an_insert_must_be_null_in_every_row(thread):
    events = [Event(thread=thread, seq=1, position=1, type="Message"),
              Event(thread=thread, seq=2, position=2, type="Message", cleared_by_id=1)]
    insert_sql(Event, events[:1], leave_out=("cleared_by",))
    with pytest.raises(ValueError, match="cleared_by"):
        insert_sql(Event, events, leave_out=("cleared_by",))
