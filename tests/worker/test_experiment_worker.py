"""An experiment run by a real Celery worker process: killed mid-run (SIGKILL, the item it was
sending lost), another worker takes the redelivered message and finishes, no item finished twice."""

import time
from collections import Counter

import pytest

from contextstore.models import ExperimentResult
from contextstore.selectors.calls import llm_call_at
from contextstore.services.datasets import dataset_add_call
from contextstore.services.events import event_append
from contextstore.services.experiments import experiment_create, experiment_start
from tests.fake_chat import fake_chat
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker
QUESTIONS = ["first?", "second?", "third?"]


def test_a_killed_worker_s_run_is_finished_by_the_next_without_sending_done_items_again(
        make_worker, thread, actor, settings):
    for question in QUESTIONS:
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallStart", "data": {"model": "gpt-4o",
                                              "messages": [{"role": "user", "content": question}]}},
            {"type": "LLMOutput", "role": "assistant", "content": f"Replayed answer to: {question}"}])
    for seq in (1, 3, 5):
        item = dataset_add_call(dataset_name="ci", thread=thread, call=llm_call_at(thread=thread, seq=seq),
                                actor=actor)
    with fake_chat() as server:
        server.mode = "slow"  # 3 s an answer: time to kill the worker mid-run
        env = {"PLAYGROUND_BASE_URL": server.base_url, "PLAYGROUND_TIMEOUT": "4"}
        settings.PLAYGROUND_BASE_URL = server.base_url
        first = make_worker(**env)
        first.start()
        experiment = experiment_create(dataset=item.dataset, actor=actor, name="mini", model="gpt-4o-mini",
                                       evaluators=["builtin:exact_match"])
        experiment_start(experiment=experiment, actor=actor)
        wait_for(lambda: ExperimentResult.objects.filter(experiment=experiment, status="ok").count() == 1
                 and len(server.requests) == 2, what="the first item done and the second being sent")
        first.kill()
        killed_at = time.monotonic()
        make_worker(**env).start()
        wait_for(lambda: experiment.__class__.objects.get(pk=experiment.pk).status == "done",
                 timeout=90, what="the run finished by the second worker")
    experiment.refresh_from_db()
    results = ExperimentResult.objects.filter(experiment=experiment)
    assert (experiment.done_count, experiment.error_count) == (3, 0)
    assert sorted(r.output for r in results) == [f"Replayed answer to: {q}" for q in QUESTIONS]
    sent = Counter(r["body"]["messages"][-1]["content"] for r in server.requests)
    # The first item was finished: never sent again; the second was lost with its worker and
    # sent again once its claim was older than a send can take; the third once.
    assert sent == {"first?": 1, "second?": 2, "third?": 1}
    assert time.monotonic() - killed_at >= 2 * 4 + 5 - 4  # the lost claim was not taken early
    assert all(s.string_value == "true" for r in results for s in r.scores.all())
