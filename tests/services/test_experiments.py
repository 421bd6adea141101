"""Experiments: a dataset sent through a variant against a local fake endpoint, scored, resumed
after a crash, never sending an item twice (services/experiments.py)."""

import pytest
from django.utils import timezone

from contextstore.errors import Conflict
from contextstore.models import AuditLog, ExperimentResult, ExperimentScore
from contextstore.selectors.calls import llm_call_at
from contextstore.selectors.experiments import experiment_comparison, experiment_summary
from contextstore.services import experiments
from contextstore.services.datasets import dataset_add_call
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.experiments import experiment_create, experiment_run, experiment_start
from tests.services.test_evaluate import make as make_version

QUESTIONS = ["Which tests fail?", "Why is CI red?", "Who broke main?"]


@pytest.fixture
def dataset(thread, actor):
    """Three calls, each recorded with its system prompt, params and answer, in one dataset."""
    for n, question in enumerate(QUESTIONS):
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallStart", "data": {
                "model": "gpt-4o", "params": {"temperature": 0.3, "stream": True},
                "messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": question}]}},
            {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 100, "output_tokens": 5}},
            {"type": "LLMOutput", "role": "assistant", "content": f"Replayed answer to: {question}" if n == 0
             else f"Answer {n}"}])
    item = None
    for seq in (1, 4, 7):
        item = dataset_add_call(dataset_name="ci", thread=thread, call=llm_call_at(thread=thread, seq=seq),
                                actor=actor)
    return item.dataset


def make_evaluator(workspace, actor, kind, **version):
    return make_version(workspace, actor, kind, **version).evaluator


def variant(dataset, actor, **more):
    more.setdefault("evaluators", ["builtin:exact_match", "builtin:similarity"])
    return experiment_create(dataset=dataset, actor=actor, name="terse", system_prompt="Answer in one line.",
                             template="Question: {input}", model="gpt-4o-mini",
                             params={"temperature": 0, "max_tokens": 50}, **more)


def run(experiment, actor):
    experiment_start(experiment=experiment, actor=actor)  # queued on commit, which this test never reaches
    return experiment_run(experiment_id=experiment.pk)


def test_a_run_sends_each_item_with_the_variant_and_keeps_output_usage_and_cost(dataset, actor, endpoint):
    experiment = run(variant(dataset, actor), actor)
    assert (experiment.status, experiment.item_count, experiment.done_count, experiment.error_count) == (
        "done", 3, 3, 0)
    assert [r["body"] for r in endpoint.requests][0] == {
        "model": "gpt-4o-mini", "temperature": 0, "max_tokens": 50,
        "messages": [{"role": "system", "content": "Answer in one line."},
                     {"role": "user", "content": "Question: Which tests fail?"}]}  # no stream
    results = list(ExperimentResult.objects.filter(experiment=experiment).order_by("item_id"))
    assert [r.output for r in results] == [f"Replayed answer to: Question: {q}" for q in QUESTIONS]
    first = results[0]
    assert first.request == endpoint.requests[0]["body"] and first.model == "gpt-4o-mini"
    assert (first.input_tokens, first.output_tokens) == (1200, 30) and first.cost > 0
    assert first.latency_ms is not None and first.finished_at is not None
    assert AuditLog.objects.filter(action="experiment.done", target_id=str(experiment.pk)).count() == 1


def test_each_output_is_scored_and_the_expected_output_beside_it(dataset, actor, endpoint):
    experiment = run(variant(dataset, actor), actor)
    scores = {(s.result.item_id, s.target, s.evaluator): s
              for s in ExperimentScore.objects.select_related("result")}
    first_item = min(k[0] for k in scores)
    exact = scores[(first_item, "output", "builtin:exact_match")]
    assert (exact.data_type, exact.string_value, exact.value) == ("boolean", "false", 0.0)
    similarity = scores[(first_item, "output", "builtin:similarity")]
    assert 0.5 < similarity.value < 1
    # Reference evaluators are not run on the expected output itself.
    assert not [k for k in scores if k[1] == "expected"]
    summary = experiment_summary(experiment=experiment)
    assert summary["ok"] == 3 and summary["errors"] == 0 and summary["cost"] > 0
    assert summary["scores"]["builtin:exact_match"]["average"] == 0.0
    assert summary["scores"]["builtin:exact_match"]["count"] == 3


def test_one_item_failing_does_not_stop_the_others(dataset, actor, endpoint):
    endpoint.fail_when = "Why is CI red?"
    experiment = run(variant(dataset, actor), actor)
    assert (experiment.status, experiment.done_count, experiment.error_count) == ("done", 3, 1)
    failed = ExperimentResult.objects.get(experiment=experiment, status="error")
    assert "HTTP 500" in failed.error and failed.output == "" and failed.cost is None
    assert failed.request["messages"][-1]["content"] == "Question: Why is CI red?"
    assert ExperimentResult.objects.filter(experiment=experiment, status="ok").count() == 2
    assert not ExperimentScore.objects.filter(result=failed).exists()
    # Run again: only the failed item is sent.
    endpoint.fail_when = ""
    endpoint.requests.clear()
    experiment = run(experiment, actor)
    assert [r["body"]["messages"][-1]["content"] for r in endpoint.requests] == ["Question: Why is CI red?"]
    assert (experiment.status, experiment.done_count, experiment.error_count) == ("done", 3, 0)


def test_an_item_without_a_model_is_an_error_of_that_item(dataset, actor, endpoint):
    dataset.items.update(metadata={"source": {}})  # no recorded model, and the variant names none
    experiment = run(experiment_create(dataset=dataset, actor=actor, name="as recorded"), actor)
    assert experiment.error_count == 3 and endpoint.requests == []
    assert "No model" in ExperimentResult.objects.filter(experiment=experiment).first().error


def test_a_crash_mid_run_resumes_without_sending_a_finished_item_again(dataset, actor, endpoint, monkeypatch):
    experiment = variant(dataset, actor)
    experiment_start(experiment=experiment, actor=actor)
    real, sent = experiments.chat_completion, []

    def dies_on_second(body, *endpoint_args):
        if len(sent) == 1:
            raise SystemExit("worker killed")  # not an Exception: the run itself dies here
        sent.append(body)
        return real(body, *endpoint_args)

    monkeypatch.setattr(experiments, "chat_completion", dies_on_second)
    with pytest.raises(SystemExit):
        experiment_run(experiment_id=experiment.pk)
    experiment.refresh_from_db()
    assert experiment.status == "running" and experiment.done_count == 1
    # The dead worker's claim on the second item holds until no send could still be running.
    claimed = ExperimentResult.objects.get(experiment=experiment, status="running")
    monkeypatch.setattr(experiments, "chat_completion", real)
    endpoint.requests.clear()
    assert experiment_run(experiment_id=experiment.pk).status == "running"  # redelivered too soon
    assert [r["body"]["messages"][-1]["content"] for r in endpoint.requests] == ["Question: Who broke main?"]
    ExperimentResult.objects.filter(pk=claimed.pk).update(
        started_at=timezone.now() - experiments.claim_after() * 2)
    endpoint.requests.clear()
    experiment = experiment_run(experiment_id=experiment.pk)
    assert [r["body"]["messages"][-1]["content"] for r in endpoint.requests] == ["Question: Why is CI red?"]
    assert (experiment.status, experiment.done_count, experiment.error_count) == ("done", 3, 0)
    assert ExperimentResult.objects.filter(experiment=experiment).count() == 3


def test_a_run_delivered_twice_sends_nothing_twice(dataset, actor, endpoint):
    experiment = run(variant(dataset, actor), actor)
    assert experiment_run(experiment_id=experiment.pk) is None  # done: not pending any more
    experiment_start(experiment=experiment, actor=actor)  # run again: nothing is missing
    assert experiment_run(experiment_id=experiment.pk).status == "done"
    assert experiment_run(experiment_id=experiment.pk) is None
    assert len(endpoint.requests) == 3 and ExperimentResult.objects.count() == 3


def test_a_long_run_queues_its_rest_as_a_new_task(dataset, actor, endpoint, monkeypatch, settings,
                                                  django_capture_on_commit_callbacks):
    experiment = variant(dataset, actor)
    experiment_start(experiment=experiment, actor=actor)
    queued = []
    monkeypatch.setattr(experiments, "send_experiment", queued.append)
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the outbox hands it over inline
    with django_capture_on_commit_callbacks(execute=True):
        experiment = experiment_run(experiment_id=experiment.pk, seconds=0)
    assert experiment.status == "running" and experiment.done_count == 1 and queued == [experiment.pk]
    assert experiment_run(experiment_id=experiment.pk).status == "done" and len(endpoint.requests) == 3


def test_starting_is_refused_while_running_or_without_an_endpoint(dataset, actor, endpoint, settings):
    experiment = variant(dataset, actor)
    experiment_start(experiment=experiment, actor=actor)
    with pytest.raises(Conflict, match="running already"):
        experiment_start(experiment=experiment, actor=actor)
    settings.PLAYGROUND_BASE_URL = ""
    with pytest.raises(Conflict, match="No playground endpoint"):
        experiment_start(experiment=variant(dataset, actor), actor=actor)


def test_a_stalled_run_can_be_started_again(dataset, actor, endpoint):
    experiment = variant(dataset, actor)
    experiment_start(experiment=experiment, actor=actor)
    long_ago = timezone.now() - experiments.claim_after() * 20
    type(experiment).objects.filter(pk=experiment.pk).update(touched_at=long_ago)
    assert run(experiment, actor).status == "done"


def test_the_comparison_puts_each_output_beside_the_baseline(dataset, actor, endpoint):
    first = run(variant(dataset, actor), actor)
    rows = experiment_comparison(experiment=first)
    assert [r.baseline.output for r in rows] == [
        "Replayed answer to: Which tests fail?", "Answer 1", "Answer 2"]
    assert rows[0].variant.output == "Replayed answer to: Question: Which tests fail?"
    assert ("add", "Question: ") in rows[0].diff
    second = run(experiment_create(dataset=dataset, actor=actor, name="as recorded", baseline=first), actor)
    rows = experiment_comparison(experiment=second)
    assert rows[0].baseline.output == first.results.order_by("item_id")[0].output
    assert rows[0].variant.output == "Replayed answer to: Which tests fail?"
    assert rows[0].cost_delta is not None and rows[0].latency_delta is not None


def test_the_workspace_evaluators_score_each_output_and_the_expected_one(dataset, actor, endpoint, workspace):
    judge = make_evaluator(workspace, actor, "llm_judge", name="polite", model="judge-1",
                           prompt="Answer: {{output}}\nIs it polite?", config={"score_type": "numeric"})
    rule = make_evaluator(workspace, actor, "regex", name="answers", config={"pattern": "nswer"})
    cost = make_evaluator(workspace, actor, "cost_limit", name="cheap", config={"max_cost": 1})
    endpoint.reply = '{"score": 0.75, "reason": "Polite enough."}'  # the variant's and the judge's answer
    experiment = run(variant(dataset, actor, evaluators=[str(judge.pk), str(rule.pk), str(cost.pk)]), actor)
    assert experiment.status == "done"
    judged = [r["body"] for r in endpoint.requests if r["body"]["model"] == "judge-1"]
    # each output, then each expected output, judged with the version's prompt
    assert len(judged) == 6 and "Answer: {\"score\": 0.75" in judged[0]["messages"][1]["content"]
    assert "Answer: Replayed answer to: Which tests fail?" in judged[1]["messages"][1]["content"]
    scores = ExperimentScore.objects.filter(result__experiment=experiment)
    polite = scores.filter(evaluator=str(judge.pk), target="output")
    assert {(s.value, s.reason, s.name, s.version_id) for s in polite} == {
        (0.75, "Polite enough.", "polite", judge.latest.pk)}
    assert polite.first().raw == endpoint.reply
    answers = {(s.target, s.string_value) for s in scores.filter(evaluator=str(rule.pk))}
    assert answers == {("output", "false"), ("expected", "true")}
    # a cost limit judges the variant's cost; the expected output has none to judge
    assert {(s.target, s.string_value) for s in scores.filter(evaluator=str(cost.pk))} == {("output", "true")}
    summary = experiment_summary(experiment=experiment)
    assert summary["scores"][str(judge.pk)]["average"] == 0.75
    expected = experiment_summary(experiment=experiment, target="expected")
    assert expected["scores"][str(rule.pk)]["average"] == 1


def test_an_evaluator_deleted_since_scores_as_an_error(dataset, actor, endpoint, workspace):
    rule = make_evaluator(workspace, actor, "regex", name="answers", config={"pattern": "answer"})
    experiment = variant(dataset, actor, evaluators=[str(rule.pk)])
    rule.delete()
    experiment = run(experiment, actor)
    assert experiment.status == "done" and experiment.error_count == 0
    errors = set(ExperimentScore.objects.filter(target="output").values_list("error", flat=True))
    assert errors == {"No such evaluator in this workspace (deleted?)."}


def test_erasing_the_person_takes_the_experiment_results_of_their_items(dataset, actor, endpoint, session):
    experiment = run(variant(dataset, actor), actor)
    assert ExperimentScore.objects.filter(result__experiment=experiment).count() == 6
    receipt = user_erase(workspace=session.workspace, user_id="alice", actor=actor)
    assert receipt["counts"]["dataset_items"] == 3 and receipt["counts"]["experiment_results"] == 3
    assert not ExperimentResult.objects.exists() and not ExperimentScore.objects.exists()
