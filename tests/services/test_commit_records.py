"""A framework commit's answer is kept for a replay of its batch id for COMMIT_REPLAY_HOURS only
(services/commits.commit_records_prune, run by beat). A retry after that is applied again and,
when its events have client ids and its blobs keys, duplicates nothing."""

from datetime import timedelta

from django.utils import timezone

from contextstore.models import CommitRecord, Event, ThreadBlob
from contextstore.selectors.agent_sessions import Identity
from contextstore.services.agent_sessions import BlobIn, CommitIn, session_commit
from contextstore.services.commits import commit_records_prune
from tests.conftest import messages

IDENTITY = Identity(app="adk", user_id="alice", key="s-commit")


def commit(workspace, actor, batch_id: str, n: int = 2, start: int = 0) -> dict:
    events = [{**e, "client_id": f"e-{start + i}"} for i, e in enumerate(messages(n, start=start))]
    return session_commit(workspace=workspace, identity=IDENTITY, actor=actor, commit=CommitIn(
        events=events, state={"turn": start}, blobs=[BlobIn(key="checkpoint", data=b"x" * start)],
        batch_id=batch_id, create=True))


def age(batch_ids: list[str], hours: int) -> None:
    CommitRecord.objects.filter(batch_id__in=batch_ids).update(
        created_at=timezone.now() - timedelta(hours=hours))


def batch_ids() -> list[str]:
    return sorted(CommitRecord.objects.values_list("batch_id", flat=True))


def test_records_older_than_the_window_go_and_recent_ones_stay(workspace, actor, settings):
    settings.COMMIT_REPLAY_HOURS = 24
    for i in range(5):
        commit(workspace, actor, f"b{i}", start=2 * i)
    age(["b0", "b1", "b2"], hours=25)
    assert commit_records_prune() == {"batches": 1, "commit_records": 3}
    assert batch_ids() == ["b3", "b4"]
    assert commit_records_prune() == {"batches": 1, "commit_records": 0}


def test_it_deletes_in_batches_the_oldest_first_and_stops_at_its_budget(workspace, actor):
    for i in range(7):
        commit(workspace, actor, f"b{i}", start=2 * i)
    age([f"b{i}" for i in range(6)], hours=25)
    assert commit_records_prune(hours=24, batch_size=2, max_batches=2) == {"batches": 2, "commit_records": 4}
    assert batch_ids() == ["b4", "b5", "b6"]
    assert commit_records_prune(hours=24, batch_size=2) == {"batches": 2, "commit_records": 2}
    assert batch_ids() == ["b6"]


def test_zero_hours_keeps_every_record(workspace, actor, settings):
    settings.COMMIT_REPLAY_HOURS = 0
    commit(workspace, actor, "b0")
    age(["b0"], hours=24 * 365)
    assert commit_records_prune() == {"batches": 0, "commit_records": 0}
    assert batch_ids() == ["b0"]


def test_a_commit_retried_after_its_record_went_duplicates_nothing(workspace, actor):
    first = commit(workspace, actor, "b0", n=3, start=5)
    age(["b0"], hours=25)
    commit_records_prune(hours=24)
    assert batch_ids() == []

    again = commit(workspace, actor, "b0", n=3, start=5)
    assert again["events"] == first["events"] and again["last_seq"] == first["last_seq"] == 3
    assert Event.objects.filter(thread_id=first["thread"]).count() == 3
    assert ThreadBlob.objects.filter(thread_id=first["thread"]).count() == 1
    assert batch_ids() == ["b0"]  # kept again, for a replay of the retry


def test_beat_prunes_through_its_task_at_the_retention_schedule(workspace, actor, settings):
    from contextstore import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["prune-commit-records"]
    assert entry == {"task": "contextstore.tasks.prune_commit_records",
                     "schedule": settings.CELERY_BEAT_SCHEDULE["apply-retention"]["schedule"]}
    commit(workspace, actor, "b0")
    age(["b0"], hours=settings.COMMIT_REPLAY_HOURS + 1)
    assert tasks.prune_commit_records() == {"batches": 1, "commit_records": 1}
