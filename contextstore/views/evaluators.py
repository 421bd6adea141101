"""Evaluators in the dashboard: the workspace's list, a new one (of a kind chosen first), one's
page (its settings, versions, the online run's evaluations with their errors) with its edit
form (an edit is a new version) and enable/disable (services/evaluators.py)."""

import json
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Max
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextstore import evaluatorspec
from contextstore.errors import DomainError, InvalidInput
from contextstore.models import Evaluator, EvaluatorVersion
from contextstore.services import evaluators
from contextstore.services.replays import playground_configured
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    current_workspace,
    visible_workspaces,
)

RECENT = 50  # evaluations on an evaluator's page
KIND_HELP = {
    "llm_judge": "A model reads the input and the output and gives a score with its reason.",
    "regex": "The reply's text must match (or must not match) a regular expression.",
    "json_schema": "The reply's text, parsed as JSON, must satisfy a JSON Schema.",
    "tool_call": "The call must (or must not) call a tool, with arguments holding given values; "
                 "or no tool result may fail.",
    "cost_limit": "The call's (session's) cost must stay within a limit.",
    "latency_limit": "The call's latency (a session's: its calls' together) must stay within a limit.",
}


class EvaluatorForm(forms.Form):
    """Every kind's fields; a kind's page shows its own (evaluatorspec checks what is sent)."""

    name = forms.CharField(max_length=100)
    target = forms.ChoiceField(choices=Evaluator.Target.choices, initial="call", required=False)
    sample_rate = forms.FloatField(min_value=0, max_value=1, initial=1.0)
    filter_agent = forms.CharField(max_length=200, required=False)
    filter_model = forms.CharField(max_length=200, required=False)
    model = forms.CharField(max_length=200, required=False)
    prompt = forms.CharField(max_length=evaluatorspec.MAX_PROMPT, required=False, strip=False)
    score_type = forms.ChoiceField(choices=[(t, t) for t in evaluatorspec.SCORE_TYPES], required=False)
    categories = forms.CharField(max_length=2000, required=False)
    pattern = forms.CharField(max_length=2000, required=False, strip=False)
    ignore_case = forms.BooleanField(required=False)
    must_not_match = forms.BooleanField(required=False)
    schema = forms.CharField(max_length=50_000, required=False)
    check = forms.ChoiceField(choices=[(c, c.replace("_", " ")) for c in evaluatorspec.TOOL_CHECKS],
                              required=False)
    tool = forms.CharField(max_length=200, required=False)
    arguments = forms.CharField(max_length=5000, required=False)
    max_cost = forms.FloatField(required=False, min_value=0)
    max_ms = forms.FloatField(required=False, min_value=0)

    def _json(self, field: str) -> Any:
        text = self.cleaned_data.get(field) or ""
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise InvalidInput(f"{field} is not JSON: {exc}.", details={field: "JSON"}) from exc

    def config(self, kind: str) -> dict[str, Any]:
        """The kind's settings as the API takes them."""
        data = self.cleaned_data
        if kind == "llm_judge":
            categories = [c.strip() for c in (data.get("categories") or "").split(",") if c.strip()]
            return {"score_type": data.get("score_type") or "numeric",
                    **({"categories": categories} if categories else {})}
        if kind == "regex":
            return {"pattern": data.get("pattern") or "", "ignore_case": bool(data.get("ignore_case")),
                    "must_match": not data.get("must_not_match")}
        if kind == "json_schema":
            return {"schema": self._json("schema")}
        if kind == "tool_call":
            arguments = self._json("arguments")
            return {"check": data.get("check") or "called", "tool": data.get("tool") or "",
                    **({"arguments": arguments} if arguments is not None else {})}
        if kind == "cost_limit":
            return {"max_cost": data.get("max_cost")}
        return {"max_ms": data.get("max_ms")}

    def checked(self, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the evaluator's settings, the version's fields), checked by evaluatorspec."""
        if not self.is_valid():
            field, problems = next(iter(self.errors.items()))
            said = " ".join(str(problem) for problem in problems)
            raise InvalidInput(f"{field.replace('_', ' ')}: {said}", details={field: "invalid"})
        data = self.cleaned_data
        settings = evaluatorspec.evaluator_settings(
            name=data["name"], target=data["target"] or "call", sample_rate=data["sample_rate"],
            filter_agent=data["filter_agent"], filter_model=data["filter_model"])
        version = evaluatorspec.evaluator_version(kind=kind, model=data["model"], prompt=data["prompt"],
                                                  config=self.config(kind))
        return settings, version


def form_initial(evaluator: Evaluator, version: EvaluatorVersion) -> dict[str, Any]:
    config = version.config
    initial: dict[str, Any] = {
        "name": evaluator.name, "target": evaluator.target, "sample_rate": evaluator.sample_rate,
        "filter_agent": evaluator.filter_agent, "filter_model": evaluator.filter_model,
        "model": version.model, "prompt": version.prompt, "score_type": config.get("score_type"),
        "categories": ", ".join(config.get("categories", [])), "pattern": config.get("pattern"),
        "ignore_case": config.get("ignore_case"), "must_not_match": config.get("must_match") is False,
        "check": config.get("check"), "tool": config.get("tool"),
        "max_cost": config.get("max_cost"), "max_ms": config.get("max_ms")}
    if "schema" in config:
        initial["schema"] = json.dumps(config["schema"], indent=2)
    if "arguments" in config:
        initial["arguments"] = json.dumps(config["arguments"])
    return initial


def _evaluator(request: DashboardRequest, pk: int) -> Evaluator:
    """An evaluator of a workspace the person belongs to; another's is a 404."""
    evaluator = (Evaluator.objects.select_related("workspace")
                 .filter(pk=pk, workspace__in=visible_workspaces(request.user)).first())
    if evaluator is None:
        raise Http404("No such evaluator.")
    return evaluator


def _editor(request: DashboardRequest, evaluator_workspace: Any) -> None:
    if not can_edit(request.user, evaluator_workspace):
        raise PermissionDenied("Viewers cannot change anything.")


@login_required
def evaluator_list(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    rows = list(Evaluator.objects.filter(workspace=workspace)
                .annotate(version_number=Max("versions__number"))) if workspace else []
    for row in rows:  # the newest RECENT's outcomes (evaluation_recent): a page's cost, not the history's
        statuses = list(row.evaluations.order_by("-id").values_list("status", flat=True)[:RECENT])
        row.done, row.failed = statuses.count("done"), statuses.count("error")  # type: ignore[attr-defined]
    return render(request, "contextstore/evaluators.html", {
        "workspace": workspace, "evaluators": rows, "kinds": Evaluator.Kind.choices,
        "can_edit": workspace is not None and can_edit(request.user, workspace)})


@login_required
def evaluator_new(request: DashboardRequest) -> HttpResponse:
    """GET ?kind=: the form of that kind (no kind: the kinds to choose from); POST: create."""
    workspace = current_workspace(request)
    if workspace is None:
        raise Http404("No workspace.")
    _editor(request, workspace)
    kind = request.POST.get("kind") or request.GET.get("kind") or ""
    context: dict[str, Any] = {"workspace": workspace, "judge_ready": playground_configured(workspace),
                               "kinds": [(v, label, KIND_HELP[v]) for v, label in Evaluator.Kind.choices]}
    if kind not in Evaluator.Kind.values:
        return render(request, "contextstore/evaluator_new.html", context)
    form = EvaluatorForm(request.POST or None, initial={"score_type": "numeric", "check": "called"})
    context |= {"kind": kind, "kind_label": Evaluator.Kind(kind).label, "form": form}
    if request.method == "POST":
        try:
            settings, version = EvaluatorForm(request.POST).checked(kind)
            evaluator = evaluators.evaluator_create(
                workspace=workspace, actor=actor_for(request), kind=kind, enabled=True, **settings, **version)
            return redirect(reverse("contextstore:evaluator", args=[evaluator.pk]))
        except DomainError as exc:
            context["error"] = exc.message
            return render(request, "contextstore/evaluator_new.html", context, status=exc.status)
    return render(request, "contextstore/evaluator_new.html", context)


@login_required
def evaluator_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    """The evaluator, its versions and its newest evaluations; POST: an edit (a new version
    when the judge's model or prompt or the rule's settings change)."""
    evaluator = _evaluator(request, pk)
    versions = list(evaluator.versions.all())
    latest = versions[0]
    error, status = "", 200
    form = EvaluatorForm(initial=form_initial(evaluator, latest))
    if request.method == "POST":
        _editor(request, evaluator.workspace)
        form = EvaluatorForm(request.POST)
        try:
            settings, version = form.checked(evaluator.kind)
            settings.pop("target")  # an evaluator keeps what it scores
            evaluators.evaluator_update(evaluator=evaluator, actor=actor_for(request), fields=settings,
                                        version=version)
            return redirect(reverse("contextstore:evaluator", args=[evaluator.pk]))
        except DomainError as exc:
            error, status = exc.message, exc.status
    recent = list(evaluator.evaluations.select_related("version", "score", "thread", "session")
                  .order_by("-id")[:RECENT])
    return render(request, "contextstore/evaluator_detail.html", {
        "workspace": evaluator.workspace, "evaluator": evaluator, "versions": versions, "latest": latest,
        "evaluations": recent, "form": form, "error": error, "kind": evaluator.kind,
        "can_edit": can_edit(request.user, evaluator.workspace),
        "judge_ready": playground_configured(evaluator.workspace)}, status=status)


@login_required
@require_POST
def evaluator_toggle(request: DashboardRequest, pk: int) -> HttpResponse:
    evaluator = _evaluator(request, pk)
    _editor(request, evaluator.workspace)
    evaluators.evaluator_update(evaluator=evaluator, actor=actor_for(request),
                                fields={"enabled": not evaluator.enabled})
    if request.POST.get("next") == "list":
        return redirect(reverse("contextstore:evaluators"))
    return redirect(reverse("contextstore:evaluator", args=[evaluator.pk]))
