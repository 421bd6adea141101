"""Finding: replays ran inside the web request with no cap, and ten replays from one editor
filled every web thread. A replay is now a worker job: the request only queues it, at most
PLAYGROUND_MAX_PER_USER per person and PLAYGROUND_MAX_PENDING in all are pending at once (more
are refused, 429, nothing kept), and the page polls the replay's card."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contextstore.models import CallReplay, Membership
from contextstore.services.events import event_append
from contextstore.services.replays import replay_run
from project.celery import app
from tests.views.conftest import HTMX, _member

SENT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which tests fail?"}]


@pytest.fixture
def recorded(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": SENT}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 10, "output_tokens": 2}}])
    return thread


def logged_in(client, workspace, name):
    client.force_login(_member(workspace, name, Membership.Role.EDITOR))
    return client


def ask(client, thread):
    return client.post(f"/threads/{thread.pk}/calls/1/replay/", {"model": "gpt-4o"})


def test_the_web_request_only_queues_the_replay_and_a_worker_sends_it(
        client, workspace, recorded, endpoint, settings, django_capture_on_commit_callbacks):
    logged_in(client, workspace, "eddie")
    assert ask(client, recorded).status_code == 302
    replay = CallReplay.objects.get()
    assert (replay.status, endpoint.requests) == ("queued", [])
    # The task the request queued after commit, run as a worker runs it (eagerly here).
    saved = app.conf.task_always_eager
    settings.CELERY_TASK_ALWAYS_EAGER = app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert ask(client, recorded).status_code == 302
    finally:
        app.conf.task_always_eager = saved
    latest = CallReplay.objects.latest("pk")
    assert latest.status == "ok" and latest.started_at is not None and len(endpoint.requests) == 1


def test_one_person_over_the_per_user_cap_is_refused_and_nothing_is_kept(
        client, workspace, recorded, endpoint, settings):
    settings.PLAYGROUND_MAX_PER_USER = 2
    logged_in(client, workspace, "eddie")
    assert [ask(client, recorded).status_code for _ in range(2)] == [302, 302]
    refused = ask(client, recorded)
    assert refused.status_code == 429 and "2 replays pending" in refused.content.decode()
    assert CallReplay.objects.count() == 2 and endpoint.requests == []
    replay_run(replay_id=CallReplay.objects.earliest("pk").pk)  # one finishes: a slot is free
    assert ask(client, recorded).status_code == 302


def test_the_global_cap_holds_across_people(client, workspace, recorded, endpoint, settings):
    settings.PLAYGROUND_MAX_PER_USER, settings.PLAYGROUND_MAX_PENDING = 5, 3
    people = [logged_in(Client(), workspace, name) for name in ("ann", "bob")]
    assert [ask(people[i % 2], recorded).status_code for i in range(3)] == [302, 302, 302]
    refused = ask(people[1], recorded)
    assert refused.status_code == 429 and "3 replays are pending" in refused.content.decode()
    assert CallReplay.objects.count() == 3


def test_a_replay_no_worker_took_fails_when_read_and_frees_its_slot(
        client, workspace, recorded, endpoint, settings):
    settings.PLAYGROUND_MAX_PER_USER = 1
    logged_in(client, workspace, "eddie")
    ask(client, recorded)
    replay = CallReplay.objects.get()
    CallReplay.objects.filter(pk=replay.pk).update(created_at=timezone.now() - timedelta(seconds=3600))
    card = client.get(f"/threads/{recorded.pk}/calls/1/replays/{replay.pk}/", **HTMX).content.decode()
    assert "No worker sent this replay in time" in card and "hx-get" not in card
    assert ask(client, recorded).status_code == 302
    # a worker that takes the stale one late sends nothing
    assert replay_run(replay_id=replay.pk) is None and endpoint.requests == []


def test_a_replay_delivered_twice_is_sent_once(client, workspace, recorded, endpoint):
    logged_in(client, workspace, "eddie")
    ask(client, recorded)
    replay = CallReplay.objects.get()
    assert replay_run(replay_id=replay.pk).status == "ok"
    assert replay_run(replay_id=replay.pk) is None
    assert len(endpoint.requests) == 1


def test_another_workspace_cannot_read_a_replay_card(client, other_workspace, workspace, recorded, endpoint):
    logged_in(client, workspace, "eddie")
    ask(client, recorded)
    replay = CallReplay.objects.get()
    logged_in(client, other_workspace, "otto")
    assert client.get(f"/threads/{recorded.pk}/calls/1/replays/{replay.pk}/").status_code == 404
