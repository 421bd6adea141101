"""Experiments on the dashboard: made from a dataset's page, run, polled, compared side by side
with the expected outputs or another experiment; escaped; another workspace's is a 404."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore.models import Experiment, ExperimentResult
from contextstore.selectors.calls import llm_call_at
from contextstore.services.datasets import dataset_add_call
from contextstore.services.events import event_append
from contextstore.services.experiments import experiment_create, experiment_run, experiment_start
from tests.services.test_evaluate import make as make_version
from tests.views.conftest import HTMX


@pytest.fixture
def dataset(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": [
            {"role": "user", "content": "List the <b>tests</b>."}]}},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 10, "output_tokens": 2}},
        {"type": "LLMOutput", "role": "assistant", "content": "Two <i>tests</i>."}])
    return dataset_add_call(dataset_name="ci", thread=thread, call=llm_call_at(thread=thread, seq=1),
                            actor=actor).dataset


def test_an_editor_makes_an_experiment_from_the_dataset_page(editor_client, dataset):
    page = editor_client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert "New experiment" in page and 'name="evaluators" value="builtin:exact_match"' in page
    response = editor_client.post(f"/datasets/{dataset.pk}/experiments/", {
        "name": "terse", "system_prompt": "Be terse.", "template": "Q: {input}", "model": "gpt-4o-mini",
        "temperature": "0.2", "max_tokens": "64", "evaluators": ["builtin:similarity"]})
    experiment = Experiment.objects.get()
    assert response.status_code == 302 and response.url == f"/experiments/{experiment.pk}/"
    assert (experiment.model, experiment.params, experiment.evaluators, experiment.status) == (
        "gpt-4o-mini", {"temperature": 0.2, "max_tokens": 64}, ["builtin:similarity"], "draft")
    page = editor_client.get(response.url).content.decode()
    assert "Not run yet." in page and "data-run" in page


@pytest.mark.parametrize(("field", "value", "said"), [
    ("temperature", "9", "temperature must be a number from 0 to 2"),
    ("max_tokens", "1.5", "max_tokens must be a whole number"),
    ("name", " ", "Name the experiment"),
    ("baseline", "999", "The baseline must be an experiment of this dataset")])
def test_a_bad_variant_is_refused_with_its_reason(editor_client, dataset, field, value, said):
    response = editor_client.post(f"/datasets/{dataset.pk}/experiments/", {"name": "x", field: value})
    assert response.status_code == 400 and said in response.content.decode()
    assert not Experiment.objects.exists()


def test_run_queues_and_the_status_polls_until_the_results_are_in(editor_client, dataset, actor, endpoint):
    experiment = experiment_create(dataset=dataset, actor=actor, name="terse", model="gpt-4o-mini",
                                   evaluators=["builtin:exact_match"])
    response = editor_client.post(f"/experiments/{experiment.pk}/run/")
    assert response.status_code == 302
    experiment.refresh_from_db()
    assert experiment.status == "queued" and experiment.item_count == 1
    status = editor_client.get(f"/experiments/{experiment.pk}/?status=1", **HTMX)
    assert 'data-poll' in status.content.decode() and "HX-Refresh" not in status
    experiment_run(experiment_id=experiment.pk)
    status = editor_client.get(f"/experiments/{experiment.pk}/?status=1", **HTMX)
    assert status["HX-Refresh"] == "true" and "Done: 1 item" in status.content.decode()
    page = editor_client.get(f"/experiments/{experiment.pk}/").content.decode()
    # Untrusted text on both sides is escaped.
    assert "Two &lt;i&gt;tests&lt;/i&gt;." in page and "<i>tests" not in page
    assert "Replayed answer to: List the &lt;b&gt;tests&lt;/b&gt;." in page and "<b>tests" not in page
    assert 'data-evaluator="builtin:exact_match"' in page and "exact match: false" in page
    assert "Diff of the outputs" in page and "Request as sent" in page and "gpt-4o-mini" in page


def test_two_experiments_compare_side_by_side_with_deltas(editor_client, dataset, actor, endpoint):
    first = experiment_create(dataset=dataset, actor=actor, name="first", model="gpt-4o")
    second = experiment_create(dataset=dataset, actor=actor, name="second", model="gpt-4o-mini",
                               template="Briefly: {input}")
    for e in (first, second):
        experiment_start(experiment=e, actor=actor)
        experiment_run(experiment_id=e.pk)
    response = editor_client.get(f"/datasets/{dataset.pk}/compare/",
                                 {"experiment": second.pk, "against": first.pk})
    assert response.url == f"/experiments/{second.pk}/?against={first.pk}"
    page = editor_client.get(response.url).content.decode()
    assert f'Compared with <a href="/experiments/{first.pk}/">first</a>' in page
    assert "Replayed answer to: Briefly: List" in page and "data-cost-delta" in page
    mine, theirs = (ExperimentResult.objects.get(experiment=e) for e in (second, first))
    assert f"Δ cost {'+' if mine.cost >= theirs.cost else '−'}" in page
    assert editor_client.get(f"/experiments/{second.pk}/?against=999").status_code == 404


def test_another_workspace_s_experiment_is_a_404_and_viewers_cannot_run(
        outsider_client, viewer_client, dataset, actor, endpoint):
    experiment = experiment_create(dataset=dataset, actor=actor, name="terse")
    assert outsider_client.get(f"/experiments/{experiment.pk}/").status_code == 404
    assert outsider_client.post(f"/experiments/{experiment.pk}/run/").status_code == 404
    assert outsider_client.post(f"/datasets/{dataset.pk}/experiments/", {"name": "x"}).status_code == 404
    assert viewer_client.get(f"/experiments/{experiment.pk}/").status_code == 200
    assert viewer_client.post(f"/experiments/{experiment.pk}/run/").status_code == 403
    assert viewer_client.post(f"/datasets/{dataset.pk}/experiments/", {"name": "x"}).status_code == 403
    assert "New experiment" not in viewer_client.get(f"/datasets/{dataset.pk}/").content.decode()


def test_running_without_an_endpoint_says_so(editor_client, dataset, actor, settings):
    settings.PLAYGROUND_BASE_URL = ""
    experiment = experiment_create(dataset=dataset, actor=actor, name="terse")
    response = editor_client.post(f"/experiments/{experiment.pk}/run/")
    assert response.status_code == 409 and "No playground endpoint" in response.content.decode()


def test_admin_lists_experiments_with_their_results_read_only(dataset, actor, endpoint, django_user_model,
                                                              client):
    experiment = experiment_create(dataset=dataset, actor=actor, name="terse <x>", model="gpt-4o-mini")
    experiment_start(experiment=experiment, actor=actor)
    experiment_run(experiment_id=experiment.pk)
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-for-tests-123"))
    assert "terse &lt;x&gt;" in client.get("/admin/contextstore/experiment/").content.decode()
    page = client.get(f"/admin/contextstore/experiment/{experiment.pk}/change/").content.decode()
    assert "gpt-4o-mini" in page and 'name="_save"' not in page


def test_the_workspace_evaluators_are_offered_scored_and_linked_to_their_version(
        editor_client, dataset, actor, endpoint, workspace, other_workspace):
    rule = make_version(workspace, actor, "regex", name="says tests", config={"pattern": "tests"}).evaluator
    theirs = make_version(other_workspace, actor, "regex", name="theirs", config={"pattern": "x"}).evaluator
    page = editor_client.get(f"/datasets/{dataset.pk}/").content.decode()
    assert f'value="{rule.pk}"' in page and "says tests (regular expression)" in page
    assert f'value="{theirs.pk}"' not in page
    url = f"/datasets/{dataset.pk}/experiments/"
    refused = editor_client.post(url, {"name": "x", "evaluators": [theirs.pk]})
    said = refused.content.decode()
    assert refused.status_code == 400 and f"No evaluator {theirs.pk} in this workspace" in said
    editor_client.post(url, {"name": "x", "model": "m", "evaluators": [rule.pk]})
    experiment = Experiment.objects.get()
    assert experiment.evaluators == [str(rule.pk)]
    experiment_start(experiment=experiment, actor=actor)
    experiment_run(experiment_id=experiment.pk)
    page = editor_client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "says tests: true" in page and f'href="/evaluators/{rule.pk}/#v1">v1</a>' in page


def test_the_comparison_page_reads_the_same_queries_at_any_dataset_size(
        editor_client, dataset, thread, actor, endpoint):
    def queries_for_page(experiment) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert editor_client.get(f"/experiments/{experiment.pk}/").status_code == 200
        return len(captured)

    def experiment_of_size(n: int):
        while dataset.items.count() < n:
            dataset_add_call(dataset_name="ci", thread=thread, call=llm_call_at(thread=thread, seq=1),
                             actor=actor)
        first = experiment_create(dataset=dataset, actor=actor, name=f"a{n}", model="m",
                                  evaluators=["builtin:exact_match", "builtin:similarity"])
        second = experiment_create(dataset=dataset, actor=actor, name=f"b{n}", model="m", baseline=first,
                                   evaluators=["builtin:exact_match"])
        for e in (first, second):
            experiment_start(experiment=e, actor=actor)
            experiment_run(experiment_id=e.pk)
        return second

    small, large = queries_for_page(experiment_of_size(2)), queries_for_page(experiment_of_size(12))
    assert small == large and large < 30
