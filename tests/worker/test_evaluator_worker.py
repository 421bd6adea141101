"""Evaluators' online run in a real Celery worker process (Redis broker): beat's task picks a
new call and hands it to the run task, whose judge (a local fake endpoint) scores it; a worker
killed mid-judge is replaced and the call is still scored once."""

import pytest

from contextstore import tasks
from contextstore.evaluatorspec import evaluator_version
from contextstore.models import Evaluation, Score
from contextstore.services.evaluators import evaluator_create
from contextstore.services.events import event_append
from tests.fake_chat import fake_chat
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker
ANSWER = '{"score": 0.75, "reason": "Mostly helpful."}'


@pytest.fixture
def judge():
    with fake_chat() as server:
        server.reply = ANSWER
        yield server


def judge_env(judge) -> dict[str, str]:
    return {"PLAYGROUND_BASE_URL": judge.base_url, "PLAYGROUND_TIMEOUT": "2",
            "PLAYGROUND_QUEUE_SECONDS": "1", "EVALUATOR_SETTLE_SECONDS": "0"}


def make_judge(workspace, actor):
    return evaluator_create(workspace=workspace, actor=actor, name="helpful", kind="llm_judge",
                            **evaluator_version(kind="llm_judge", model="judge-1", prompt="Rate: {{output}}",
                                                config={"score_type": "numeric"}))


def new_call(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMOutput", "content": "The keys are in the drawer."},
        {"type": "LLMComplete", "data": {"model": "m"}}])


def test_a_worker_scores_a_new_call_through_the_judge(make_worker, judge, workspace, thread, actor):
    make_worker(**judge_env(judge)).start()
    make_judge(workspace, actor)
    new_call(thread, actor)
    tasks.evaluate_online.delay()  # what beat sends
    evaluation = wait_for(lambda: Evaluation.objects.filter(status="done").first(), what="the evaluation")
    score = Score.objects.get()
    assert (evaluation.score_id, score.value, score.comment, score.seq) == (
        score.pk, 0.75, "Mostly helpful.", 1)
    assert evaluation.raw == ANSWER and evaluation.attempts == 1
    assert judge.requests[0]["body"]["messages"][1]["content"] == "Rate: The keys are in the drawer."


def test_a_worker_killed_mid_judge_is_replaced_and_the_call_scored_once(
        make_worker, judge, workspace, thread, actor):
    judge.mode = "slow"  # the judge takes 3 s: the worker is killed while it waits
    env = judge_env(judge)
    worker = make_worker(**env)
    worker.start()
    make_judge(workspace, actor)
    new_call(thread, actor)
    tasks.evaluate_online.delay()
    wait_for(lambda: judge.requests, what="the worker to ask the judge")
    worker.kill()
    assert Evaluation.objects.get().status == "running" and not Score.objects.exists()

    judge.mode = "ok"
    make_worker(**env).start()  # Redis hands it the unacknowledged message: taken already, left alone

    def scored() -> bool:
        tasks.evaluate_online.delay()  # beat's next passes: the stale row is sent again
        return Evaluation.objects.get().status == "done"

    wait_for(scored, interval=1.0, what="the evaluation to be sent again and done")
    evaluation = Evaluation.objects.get()
    assert evaluation.attempts == 2 and Score.objects.count() == 1
    assert evaluation.score.value == 0.75
