"""The agent's document through the API: every operation that writes it can be undone by
restoring the revision before it, which brings back the whole document byte for byte."""


import pytest
from django.db import connection, connections

from contextstore.models import AuditLog, StateRevision, Thread
from contextstore.selectors import document as document_reads
from contextstore.services import document as document_service
from tests.api.conftest import client_for
from tests.conftest import messages
from tests.processes import FORK, run_forked


def stored_text(thread_pk: int) -> str:
    """The document exactly as the database holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT document FROM contextstore_thread WHERE id = %s", [thread_pk])
        return cursor.fetchone()[0]


@pytest.fixture
def rich(api_client, thread_url, thread):
    """A thread whose document has something in every field an operation may change."""
    api_client.post(f"{thread_url}events/", {"events": messages(4)}, format="json")
    api_client.put(f"{thread_url}state/", {
        "state": {"zeta": {"b": None, "a": [1, None, {"y": 2, "x": 1}]}, "alpha": "é ✓", "n": None},
        "memory": [{"fact": "likes tea"}], "summary": "Earlier: greetings.",
    }, format="json")
    api_client.put(f"{thread_url}max-history-size/", {"size": 3}, format="json")
    api_client.post(f"{thread_url}input/", {"input": "first question"}, format="json")
    api_client.post(f"{thread_url}results/", {"step": "think", "result": {"ok": True}}, format="json")
    api_client.post(f"{thread_url}iteration/")
    api_client.post(f"{thread_url}input/", {"input": {"q": "second", "n": None}}, format="json")
    api_client.post(f"{thread_url}results/", {"step": "act", "result": [1, 2]}, format="json")
    return thread


def _put_summary(client, url):
    return client.put(f"{url}state/", {"summary": "Now: something else."}, format="json")


OPERATIONS = {
    "reset": lambda c, url: c.post(f"{url}reset/"),
    "reset-all": lambda c, url: c.post(f"{url}reset-all/"),
    "clear-context": lambda c, url: c.post(f"{url}clear-context/"),
    "state write": lambda c, url: c.put(f"{url}state/", {"state": {"alpha": 1}, "memory": []},
                                        format="json"),
    "state patch": lambda c, url: c.patch(f"{url}state/", {"state": {"zeta": {"a": None, "c": 3},
                                                                      "n": 0}}, format="json"),
    "summary write": _put_summary,
    "set input": lambda c, url: c.post(f"{url}input/", {"input": "third"}, format="json"),
    "step result": lambda c, url: c.post(f"{url}results/", {"step": "x", "result": None},
                                         format="json"),
    "iteration": lambda c, url: c.post(f"{url}iteration/"),
    "max history size": lambda c, url: c.put(f"{url}max-history-size/", {"size": 1}, format="json"),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_restoring_the_revision_before_an_operation_gives_back_the_whole_document(
    operation, api_client, thread_url, rich,
):
    before_text = stored_text(rich.pk)
    before = api_client.get(f"{thread_url}state/").json()["revision"]
    response = OPERATIONS[operation](api_client, thread_url)
    assert response.status_code in (200, 201), response.content
    assert stored_text(rich.pk) != before_text  # the operation did change the document
    restored = api_client.post(f"{thread_url}state/revisions/{before}/restore/")
    assert restored.status_code == 200, restored.content
    assert restored.json()["revision"] == before + 2  # a new revision, not a rewind
    assert stored_text(rich.pk) == before_text
    assert AuditLog.objects.filter(action="state.restore").latest("id").details["restored"] == before


def test_a_revision_shows_the_whole_document_then_and_the_diff_that_made_it(
    api_client, thread_url, rich,
):
    before = api_client.get(f"{thread_url}state/").json()["revision"]
    api_client.post(f"{thread_url}reset/")
    detail = api_client.get(f"{thread_url}state/revisions/{before + 1}/").json()
    assert detail["revision"] == before + 1 and detail["reason"] == "reset"
    assert detail["document"]["state"] == {} and detail["document"]["summary"] == "Earlier: greetings."
    assert detail["changed"] == ["state", "memory", "last_results", "current_input",
                                 "original_input", "iteration"]
    assert {"op": "replace", "path": "/iteration", "value": 0} in detail["diff"]
    earlier = api_client.get(f"{thread_url}state/revisions/{before}/").json()
    assert earlier["document"]["current_input"] == {"q": "second", "n": None}
    assert api_client.get(f"{thread_url}state/revisions/999/").status_code == 404


def test_another_workspaces_revision_is_a_404(api_client, other_workspace, actor, thread_url, rich):
    from contextstore.services.workspaces import api_token_create

    _, raw = api_token_create(workspace=other_workspace, actor=actor)
    assert client_for(raw).get(f"{thread_url}state/revisions/1/").status_code == 404
    assert client_for(raw).post(f"{thread_url}state/revisions/1/restore/").status_code == 404


def test_the_revision_list_keeps_its_shape(api_client, thread_url, rich):
    results = api_client.get(f"{thread_url}state/revisions/").json()["results"]
    assert set(results[-1]) >= {"revision", "state", "memory", "reason", "actor", "created_at"}
    assert results[-1]["state"] == api_client.get(f"{thread_url}state/").json()["state"]
    assert results[0]["revision"] == 0 and results[0]["state"] == {}


def test_a_merge_patch_stores_only_the_patch(api_client, thread_url, thread):
    big = {f"k{i}": "x" * 100 for i in range(500)}  # ~55 KB
    api_client.put(f"{thread_url}state/", {"state": big}, format="json")
    # the whole-state write is a patch as large as the document: a snapshot follows soon
    for i in range(5):
        revision = api_client.patch(f"{thread_url}state/", {"state": {"k1": str(i)}},
                                    format="json").json()["revision"]
        if StateRevision.objects.get(thread=thread, revision=revision).document is not None:
            break
    else:
        pytest.fail("no snapshot after patches as large as the document")
    response = api_client.patch(f"{thread_url}state/", {"state": {"k7": None, "new": 1}},
                                format="json")
    row = StateRevision.objects.get(thread=thread, revision=response.json()["revision"])
    assert row.document is None and row.size < 200
    assert list(response.json()["state"])[-1] == "new" and "k7" not in response.json()["state"]


def test_every_revision_rebuilds_from_snapshots_and_patches(thread, actor):
    from contextstore.services.state import state_write

    texts = {}
    for i in range(120):
        state_write(thread=thread, state={"i": i, f"k{i % 7}": None if i % 3 else [i]},
                    merge=bool(i % 2), actor=actor)
        thread.refresh_from_db()
        texts[thread.revision] = stored_text(thread.pk)
    rows = StateRevision.objects.filter(thread=thread)
    snapshots = rows.filter(document__isnull=False).count()
    assert 3 <= snapshots < 60  # periodic, not one per write
    for revision, text in texts.items():
        rebuilt = document_reads.revision_document(thread=thread, revision=revision)
        assert Thread._meta.get_field("document").get_prep_value(rebuilt) == text


def _cas_writer(thread_pk: int, expected: int, value: int, queue) -> None:
    connections.close_all()
    from contextstore.errors import StaleRevision
    from contextstore.services.common import Actor
    from contextstore.services.state import state_write

    try:
        state_write(thread=Thread.objects.get(pk=thread_pk), state={f"w{value}": value},
                    merge=True, expected_revision=expected, actor=Actor.worker(f"w{value}"))
        queue.put(("ok", value))
    except StaleRevision:
        queue.put(("stale", value))
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_writers_on_one_revision_one_wins_one_gets_412_and_nothing_is_lost(thread, actor):
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs against PostgreSQL")
    from contextstore.services.state import state_write

    state_write(thread=thread, state={"base": True}, actor=actor)
    thread.refresh_from_db()
    queue = FORK.Queue()
    run_forked(_cas_writer, [(thread.pk, thread.revision, v, queue) for v in (1, 2)], timeout=60)
    outcomes = sorted(queue.get(timeout=5) for _ in (1, 2))
    assert [o for o, _ in outcomes] == ["ok", "stale"]
    winner = next(v for o, v in outcomes if o == "ok")
    thread.refresh_from_db()
    assert thread.state == {"base": True, f"w{winner}": winner}
    assert thread.revision == 2
    # the loser retries on the new revision and lands on top: nothing lost
    loser = 3 - winner
    state_write(thread=thread, state={f"w{loser}": loser}, merge=True,
                expected_revision=thread.revision, actor=actor)
    thread.refresh_from_db()
    assert thread.state == {"base": True, f"w{winner}": winner, f"w{loser}": loser}


def test_the_api_refuses_a_stale_if_match_with_412_and_changes_nothing(api_client, thread_url,
                                                                       thread):
    first = api_client.put(f"{thread_url}state/", {"state": {"a": 1}}, format="json").json()
    api_client.patch(f"{thread_url}state/", {"state": {"b": 2}}, format="json",
                     HTTP_IF_MATCH=f'"{first["revision"]}"')
    before = stored_text(thread.pk)
    stale = api_client.patch(f"{thread_url}state/", {"state": {"c": 3}}, format="json",
                             HTTP_IF_MATCH=f'"{first["revision"]}"')
    assert stale.status_code == 412 and stored_text(thread.pk) == before


def test_no_revision_is_more_than_snapshot_every_patches_from_its_snapshot(thread, actor,
                                                                           monkeypatch):
    from contextstore.services.state import state_write

    monkeypatch.setattr(document_service, "SNAPSHOT_EVERY", 5)
    state_write(thread=thread, state={f"k{i}": "x" * 100 for i in range(200)}, actor=actor)
    for i in range(30):
        state_write(thread=thread, state={"c": i}, merge=True, actor=actor)
    rows = list(StateRevision.objects.filter(thread=thread))
    assert all(0 <= r.revision - r.base < 5 for r in rows)
    assert sum(r.document is not None for r in rows) <= 10  # not a snapshot per write
    thread.refresh_from_db()
    assert document_reads.revision_document(thread=thread, revision=thread.revision) == thread.document
