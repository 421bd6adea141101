"""Experiments in the dashboard: "New experiment" on a dataset's page (editors), the experiment's
page (its variant, its run's status, polled by htmx while a worker has it, and the comparison
with its baseline or with another experiment: outputs side by side, a word diff, scores per
evaluator with their averages, cost and latency with their deltas), and Run / Run again /
Resume (services/experiments.py)."""

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextstore.errors import DomainError, InvalidInput
from contextstore.experimentspec import INT_PARAMS, experiment_variant
from contextstore.models import Dataset, Experiment
from contextstore.selectors.experiments import (
    evaluator_choices,
    experiment_comparison,
    experiment_stalled,
    experiment_summary,
    unknown_evaluators,
)
from contextstore.services.experiments import experiment_create, experiment_start
from contextstore.services.replays import playground_configured
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    after_action,
    can_edit,
    error_response,
    query_int,
    visible_workspaces,
)

ROWS_PAGE = 50
FORM_PARAMS = ("temperature", "top_p", "max_tokens", "seed")


def _dataset(request: DashboardRequest, pk: int) -> Dataset:
    dataset = Dataset.objects.select_related("workspace").filter(
        pk=pk, workspace__in=visible_workspaces(request.user)).first()
    if dataset is None:
        raise Http404("No such dataset.")
    return dataset


def _experiment(request: DashboardRequest, pk: int) -> Experiment:
    """An experiment of a workspace the person belongs to; another's is a 404."""
    experiment = (Experiment.objects.select_related("workspace", "dataset", "baseline")
                  .filter(pk=pk, workspace__in=visible_workspaces(request.user)).first())
    if experiment is None:
        raise Http404("No such experiment.")
    return experiment


def _number(raw: str, name: str) -> int | float | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        return int(raw) if name in INT_PARAMS else float(raw)
    except ValueError:
        kind = "a whole number" if name in INT_PARAMS else "a number"
        raise InvalidInput(f"{name} must be {kind}.", details={name: kind}) from None


def variant_form(post: Any, dataset: Dataset) -> dict[str, Any]:
    """The form's fields as experimentspec takes them, the baseline an experiment of the dataset."""
    params = {name: value for name in FORM_PARAMS
              if (value := _number(post.get(name, ""), name)) is not None}
    data = experiment_variant({
        "name": post.get("name", ""), "system_prompt": post.get("system_prompt", "").replace("\r\n", "\n"),
        "template": post.get("template", "").replace("\r\n", "\n"), "model": post.get("model", ""),
        "params": params, "evaluators": post.getlist("evaluators")})
    unknown = unknown_evaluators(workspace=dataset.workspace, keys=data["evaluators"])
    if unknown:
        raise InvalidInput(f"No evaluator {unknown[0]} in this workspace.", details={"evaluators": "unknown"})
    baseline_id = query_int(post.get("baseline"))
    data["baseline"] = None
    if baseline_id:
        data["baseline"] = Experiment.objects.filter(pk=baseline_id, dataset=dataset).first()
        if data["baseline"] is None:
            raise InvalidInput("The baseline must be an experiment of this dataset.",
                               details={"baseline": "not an experiment of this dataset"})
    return data


@login_required
@require_POST
def experiment_new(request: DashboardRequest, pk: int) -> HttpResponse:
    dataset = _dataset(request, pk)
    if not can_edit(request.user, dataset.workspace):
        raise PermissionDenied("Viewers cannot start experiments.")
    try:
        experiment = experiment_create(dataset=dataset, actor=actor_for(request),
                                       **variant_form(request.POST, dataset))
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return after_action(request, reverse("contextstore:experiment", args=[experiment.pk]))


@login_required
@require_POST
def experiment_run(request: DashboardRequest, pk: int) -> HttpResponse:
    """Run, Run again (the failed and missing items) and Resume (a stalled run)."""
    experiment = _experiment(request, pk)
    if not can_edit(request.user, experiment.workspace):
        raise PermissionDenied("Viewers cannot run experiments.")
    try:
        experiment_start(experiment=experiment, actor=actor_for(request))
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return after_action(request, reverse("contextstore:experiment", args=[experiment.pk]))


@login_required
def experiment_compare(request: DashboardRequest, pk: int) -> HttpResponse:
    """The dataset page's compare form: the first experiment's page, compared with the second."""
    dataset = _dataset(request, pk)
    chosen = query_int(request.GET.get("experiment")) or 0
    mine = Experiment.objects.filter(dataset=dataset, pk=chosen).first()
    if mine is None:
        raise Http404("No such experiment of this dataset.")
    url = reverse("contextstore:experiment", args=[mine.pk])
    against = query_int(request.GET.get("against"))
    return redirect(f"{url}?against={against}" if against and against != mine.pk else url)


def dataset_experiments_context(request: DashboardRequest, dataset: Dataset) -> dict[str, Any]:
    """What the dataset's page shows of its experiments: the list, the new-experiment form's
    choices and the compare form."""
    return {"experiments": list(Experiment.objects.filter(dataset=dataset)[:100]),
            "evaluator_choices": evaluator_choices(workspace=dataset.workspace),
            "can_edit": can_edit(request.user, dataset.workspace),
            "configured": playground_configured(dataset.workspace)}


@login_required
@vary_on_headers("HX-Request")
def experiment_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    """The experiment and its comparison; `?against=<id>` compares it with another experiment of
    the dataset instead of its baseline; htmx polls the run's status (`#run-status`)."""
    experiment = _experiment(request, pk)
    stalled = experiment_stalled(experiment)
    context: dict[str, Any] = {"experiment": experiment, "workspace": experiment.workspace,
                               "stalled": stalled, "can_edit": can_edit(request.user, experiment.workspace)}
    if request.htmx and request.GET.get("status"):
        response = render(request, "contextstore/experiment_detail.html#run-status", context)
        if not experiment.is_pending:
            response["HX-Refresh"] = "true"  # the results are in: the page shows them
        return response
    against = None
    against_id = query_int(request.GET.get("against"))
    if against_id:
        against = Experiment.objects.filter(pk=against_id, dataset_id=experiment.dataset_id).exclude(
            pk=experiment.pk).first()
        if against is None:
            raise Http404("No such experiment of this dataset.")
    other = against or experiment.baseline
    after = query_int(request.GET.get("after")) or 0
    rows = experiment_comparison(experiment=experiment, against=against, after=after, limit=ROWS_PAGE + 1)
    summary = experiment_summary(experiment=experiment)
    base_summary = (experiment_summary(experiment=other) if other is not None
                    else experiment_summary(experiment=experiment, target="expected"))
    evaluators = {**{k: v["name"] for k, v in base_summary["scores"].items()},
                  **{k: v["name"] for k, v in summary["scores"].items()}}
    context.update({
        "rows": rows[:ROWS_PAGE], "next": rows[ROWS_PAGE - 1].item.pk if len(rows) > ROWS_PAGE else None,
        "other": other, "against": against, "summary": summary, "base_summary": base_summary,
        "evaluators": [(key, name, mine, theirs,
                        _delta(mine and mine["average"], theirs and theirs["average"]))
                       for key, name in sorted(evaluators.items())
                       for mine, theirs in [(summary["scores"].get(key), base_summary["scores"].get(key))]],
        "cost_delta": _delta(summary["cost"], base_summary["cost"]) if other else None,
        "latency_delta": _delta(summary["latency_ms"], base_summary["latency_ms"]) if other else None,
        "params": json.dumps(experiment.params, ensure_ascii=False) if experiment.params else "",
        "siblings": list(Experiment.objects.filter(dataset_id=experiment.dataset_id)
                         .exclude(pk=experiment.pk)[:100]),
        "now": timezone.now()})
    template_name = "contextstore/experiment_detail.html"
    if request.htmx and after:
        template_name += "#rows"
    return render(request, template_name, context)


def _delta(mine: Any, theirs: Any) -> Any:
    return None if mine is None or theirs is None else mine - theirs
