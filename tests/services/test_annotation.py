"""services/annotation.py: score configurations, queues and their items, and the review loop:
the next item for a person (never the same one to two people at once, on PostgreSQL's
SKIP LOCKED and on SQLite's conditional update), lease expiry, completing with scores checked
against the queue's configs, skipping."""

import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from django.utils import timezone

from contextstore.annotationspec import check_score, checked_scores, score_config_fields
from contextstore.errors import Conflict, InvalidInput
from contextstore.models import AnnotationItem, AuditLog, Membership, Score
from contextstore.services import annotation as service
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure

CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "m"}},
        {"type": "LLMComplete", "data": {"model": "m"}, "content": "hello"}]


def person(workspace, name: str):
    user = get_user_model().objects.create_user(name, password="pw-for-tests-123")
    Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.EDITOR)
    return user


def config(workspace, actor, **fields):
    return service.score_config_create(workspace=workspace, actor=actor, **score_config_fields(**fields))


@pytest.fixture
def configs(workspace, actor):
    return [config(workspace, actor, name="accuracy", data_type="numeric", min_value=0, max_value=1),
            config(workspace, actor, name="tone", data_type="categorical",
                   categories=["friendly", " curt ", "friendly"]),
            config(workspace, actor, name="helpful", data_type="boolean")]


@pytest.fixture
def queue(workspace, actor, configs):
    return service.queue_create(workspace=workspace, actor=actor, name="triage", configs=configs)


def sessions(workspace, actor, n: int):
    return [session_ensure(workspace=workspace, key=f"k{i}", actor=actor)[0] for i in range(n)]


def test_a_config_keeps_its_shape_and_its_name_is_unique(workspace, actor, configs):
    assert configs[1].categories == ["friendly", "curt"]
    assert (configs[0].min_value, configs[0].max_value, configs[0].bounds) == (0.0, 1.0, "0–1")
    with pytest.raises(Conflict):
        config(workspace, actor, name="accuracy", data_type="boolean")


@pytest.mark.parametrize("fields", [
    {"name": "", "data_type": "numeric"},
    {"name": "a:b", "data_type": "numeric"},
    {"name": "x", "data_type": "text"},
    {"name": "x", "data_type": "numeric", "min_value": 2, "max_value": 1},
    {"name": "x", "data_type": "numeric", "min_value": float("nan")},
    {"name": "x", "data_type": "boolean", "min_value": 0},
    {"name": "x", "data_type": "categorical"},
    {"name": "x", "data_type": "categorical", "categories": ["  "]},
    {"name": "x", "data_type": "numeric", "categories": ["a"]},
])
def test_a_bad_config_is_refused_at_the_door(fields):
    with pytest.raises(InvalidInput):
        score_config_fields(**fields)


@pytest.mark.parametrize(("name", "data_type", "value"), [
    ("accuracy", "numeric", 1.5), ("accuracy", "numeric", -0.1), ("accuracy", "boolean", True),
    ("tone", "categorical", "rude"), ("helpful", "numeric", 1.0)])
def test_a_score_of_a_configured_name_must_fit_its_config(configs, name, data_type, value):
    by_name = {c.name: c for c in configs}
    with pytest.raises(InvalidInput):
        check_score(name=name, data_type=data_type, value=value, config=by_name[name])
    check_score(name="unconfigured", data_type=data_type, value=value, config=None)


def test_checked_scores_take_only_the_queues_names_once(configs):
    assert checked_scores(configs, [{"name": "accuracy", "value": 1}, {"name": "tone", "value": "curt"}]) == [
        {"name": "accuracy", "data_type": "numeric", "value": 1.0, "comment": ""},
        {"name": "tone", "data_type": "categorical", "value": "curt", "comment": ""}]
    for given in ([{"name": "other", "value": 1}], [{"name": "helpful", "value": True}] * 2,
                  [{"name": "helpful", "value": "yes"}]):
        with pytest.raises(InvalidInput):
            checked_scores(configs, given)


def test_items_are_added_once_and_handed_out_in_order(workspace, actor, queue, thread):
    event_append(thread=thread, actor=actor, events=CALL)
    s = sessions(workspace, actor, 2)
    added = service.queue_add_items(queue=queue, actor=actor, targets=[
        (s[0], None, None), (thread.session, thread, None), (thread.session, thread, 2), (s[0], None, None)])
    assert added == 3
    assert service.queue_add_items(queue=queue, actor=actor, targets=[(s[0], None, None)]) == 0
    assert list(AnnotationItem.objects.order_by("rank").values_list("kind", flat=True)) == [
        "session", "thread", "call"]
    ann = person(workspace, "ann")
    first = service.queue_next_item(queue=queue, user=ann)
    assert first.session == s[0] and first.leased_by == ann
    assert service.queue_next_item(queue=queue, user=ann) == first  # the one ann holds, again


def test_completing_stores_the_persons_scores_on_the_target(workspace, actor, queue, thread):
    event_append(thread=thread, actor=actor, events=CALL)
    service.queue_add_items(queue=queue, actor=actor, targets=[(thread.session, thread, 2),
                                                                (thread.session, thread, None)])
    ann = person(workspace, "ann")
    item = service.queue_next_item(queue=queue, user=ann)
    made = service.queue_complete_item(item=item, actor=Actor.for_user(ann), scores=[
        {"name": "accuracy", "data_type": "numeric", "value": 0.5, "comment": "ok"}])
    item.refresh_from_db()
    assert (item.status, item.completed_by, item.completed_label) == ("completed", ann, "ann")
    assert [(s.thread_id, s.seq, s.value, s.author_user) for s in made] == [(thread.pk, 2, 0.5, ann)]
    with pytest.raises(Conflict):
        service.queue_complete_item(item=item, actor=Actor.for_user(ann), scores=[])
    thread_item = service.queue_next_item(queue=queue, user=ann)
    made = service.queue_complete_item(item=thread_item, actor=Actor.for_user(ann), scores=[
        {"name": "helpful", "data_type": "boolean", "value": True, "comment": ""}])
    assert (made[0].thread_id, made[0].seq) == (None, None)  # a thread's scores are its session's
    assert service.queue_next_item(queue=queue, user=ann) is None
    assert Score.objects.count() == 2
    assert AuditLog.objects.filter(action="annotation_item.complete").count() == 2


def test_a_held_item_is_not_handed_to_another_until_its_lease_expires(workspace, actor, queue):
    service.queue_add_items(queue=queue, actor=actor,
                            targets=[(s, None, None) for s in sessions(workspace, actor, 1)])
    ann, bob = person(workspace, "ann"), person(workspace, "bob")
    now = timezone.now()
    item = service.queue_next_item(queue=queue, user=ann, now=now)
    assert service.queue_next_item(queue=queue, user=bob, now=now + timedelta(minutes=1)) is None
    with pytest.raises(Conflict):
        service.queue_complete_item(item=item, actor=Actor.for_user(bob), scores=[],
                                    now=now + timedelta(minutes=1))
    later = now + service.LEASE + timedelta(seconds=1)
    taken = service.queue_next_item(queue=queue, user=bob, now=later)
    assert taken == item and taken.leased_by == bob
    with pytest.raises(Conflict):  # ann's lease is gone: bob holds it now
        service.queue_skip_item(item=item, actor=Actor.for_user(ann), now=later)


def test_skipping_moves_the_item_to_the_end(workspace, actor, queue):
    s = sessions(workspace, actor, 3)
    service.queue_add_items(queue=queue, actor=actor, targets=[(x, None, None) for x in s])
    ann = person(workspace, "ann")
    first = service.queue_next_item(queue=queue, user=ann)
    service.queue_skip_item(item=first, actor=Actor.for_user(ann))
    order = [service.queue_next_item(queue=queue, user=ann)]
    service.queue_skip_item(item=order[0], actor=Actor.for_user(ann))
    assert [order[0].session, service.queue_next_item(queue=queue, user=ann).session] == [s[1], s[2]]


def test_bulk_add_takes_the_filters_sessions_of_the_queues_workspace(workspace, other_workspace,
                                                                     actor, queue):
    from contextstore.models import Session
    sessions(workspace, actor, 3)
    session_ensure(workspace=other_workspace, key="theirs", actor=actor)
    assert service.queue_add_sessions(queue=queue, sessions=Session.objects.all(), actor=actor) == 3


# -- two reviewers at once never get the same item

def _in_thread(fn, results: list, errors: list, barrier):
    def run() -> None:
        try:
            barrier.wait()
            results.append(fn())
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)
        finally:
            connections.close_all()
    return threading.Thread(target=run)


@pytest.mark.django_db(transaction=True)
def test_reviewers_asking_at_once_get_different_items(workspace, actor, queue):
    service.queue_add_items(queue=queue, actor=actor,
                            targets=[(s, None, None) for s in sessions(workspace, actor, 6)])
    people = [person(workspace, f"p{i}") for i in range(4)]
    results: list = []
    errors: list = []
    barrier = threading.Barrier(len(people))
    workers = [_in_thread(lambda u=u: service.queue_next_item(queue=queue, user=u), results, errors, barrier)
               for u in people]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert not errors
    got = [r.pk for r in results if r is not None]
    assert len(got) == len(set(got)) == 4
    leased = AnnotationItem.objects.filter(leased_by__isnull=False).values_list("pk", flat=True)
    assert set(leased) == set(got)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_row_locked_by_another_connection_is_passed_over_not_waited_for(workspace, actor, queue):
    """The first asker's transaction still holds the first item's row lock (its UPDATE not
    committed): the second asker, on its own connection, gets the next item at once."""
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED is PostgreSQL's; SQLite serialises writers")
    service.queue_add_items(queue=queue, actor=actor,
                            targets=[(s, None, None) for s in sessions(workspace, actor, 2)])
    first_pk = AnnotationItem.objects.order_by("rank").values_list("pk", flat=True)[0]
    bob = person(workspace, "bob")
    locked, release = threading.Event(), threading.Event()
    errors: list = []

    def hold() -> None:
        try:
            with transaction.atomic():
                AnnotationItem.objects.select_for_update().get(pk=first_pk)
                locked.set()
                release.wait(30)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")  # waiting would fail the test, not hang it
        got = service.queue_next_item(queue=queue, user=bob)
    finally:
        release.set()
        holder.join(30)
    assert not errors
    assert got is not None and got.pk != first_pk
