"""Reads of experiments (services/experiments.py writes them): when a run is stalled, an item's
expected output as text, the side-by-side comparison with a baseline, and a run's totals."""

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Q, QuerySet, Sum
from django.utils import timezone

from contextstore import provider_request
from contextstore.experimentspec import BUILTIN_EVALUATORS
from contextstore.models import (
    DatasetItem,
    Evaluator,
    Experiment,
    ExperimentResult,
    ExperimentScore,
    Workspace,
)
from contextstore.prompt_cache import word_diff


def workspace_experiments(*, workspace: Workspace) -> QuerySet[Experiment]:
    return Experiment.objects.filter(workspace=workspace).select_related("dataset", "baseline")


def unknown_evaluators(*, workspace: Workspace, keys: list[str]) -> list[str]:
    """The keys (experimentspec's) that name no evaluator of the workspace."""
    ids = {int(k) for k in keys if k.isdigit()}
    found = Evaluator.objects.filter(workspace=workspace, pk__in=ids).values_list("pk", flat=True)
    known = {str(pk) for pk in found}
    return [k for k in keys if k.isdigit() and k not in known]


def evaluator_choices(*, workspace: Workspace) -> list[tuple[str, str]]:
    """(key, name) of every evaluator an experiment of the workspace can choose."""
    own = Evaluator.objects.filter(workspace=workspace).order_by("name").values_list("pk", "name", "kind")
    return [*BUILTIN_EVALUATORS.items(),
            *((str(pk), f"{name} ({Evaluator.Kind(kind).label})") for pk, name, kind in own)]


def claim_after() -> timedelta:
    """How old a `running` result's claim must be to be taken over: longer than a send can take
    (the endpoint's timeout bounds each read and the whole answer), so its worker is gone."""
    return timedelta(seconds=2 * settings.PLAYGROUND_TIMEOUT + 5)


def experiment_stalled(experiment: Experiment, now: Any = None) -> bool:
    """Pending, and no item finished for longer than a send and a wait for a worker can take:
    no worker has it (the page offers Resume)."""
    if not experiment.is_pending:
        return False
    since = experiment.touched_at or experiment.created_at
    wait = claim_after() + timedelta(seconds=settings.PLAYGROUND_QUEUE_SECONDS)
    return (now or timezone.now()) - since > wait


def expected_text(item: DatasetItem) -> str | None:
    """The item's expected output as text (its assistant message's), None when it has none."""
    if item.output is None:
        return None
    output = item.output
    turns = provider_request.chat(system=[], messages=[output if isinstance(output, dict) else
                                                       {"role": "assistant", "content": output}])
    return "\n".join(t.text for t in turns if t.text)



# ------------------------------------------------------------------ comparing

@dataclass
class Side:
    """One side of a row of the comparison: an output (or error) and its figures and scores."""

    output: str | None
    error: str = ""
    status: str = ""
    cost: Decimal | None = None
    latency_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    scores: dict[str, ExperimentScore] | None = None
    request: Any = None  # the body sent


@dataclass
class Row:
    item: DatasetItem
    variant: Side
    baseline: Side
    diff: list[tuple[str, str]]  # prompt_cache.word_diff: baseline → variant

    @property
    def cost_delta(self) -> Decimal | None:
        if self.variant.cost is None or self.baseline.cost is None:
            return None
        return self.variant.cost - self.baseline.cost

    @property
    def latency_delta(self) -> int | None:
        if self.variant.latency_ms is None or self.baseline.latency_ms is None:
            return None
        return self.variant.latency_ms - self.baseline.latency_ms


def _side(result: ExperimentResult | None, target: str = ExperimentScore.Target.OUTPUT) -> Side:
    if result is None:
        return Side(output=None)
    return Side(output=result.output if result.status == ExperimentResult.Status.OK else None,
                error=result.error, status=result.status, cost=result.cost, latency_ms=result.latency_ms,
                input_tokens=result.input_tokens, output_tokens=result.output_tokens, request=result.request,
                scores={s.evaluator: s for s in result.scores.all() if s.target == target})


def experiment_comparison(*, experiment: Experiment, against: Experiment | None = None,
                          after: int = 0, limit: int = 50) -> list[Row]:
    """One row per dataset item (from `after`, at most `limit`): the experiment's output beside
    the baseline's (`against`, else the experiment's baseline experiment, else the item's
    expected output, scored on the expected target), with the word diff of the two."""
    other = against or experiment.baseline
    items = list(DatasetItem.objects.filter(dataset_id=experiment.dataset_id, id__gt=after)
                 .order_by("id")[:limit])
    ids = [i.pk for i in items]
    mine = {r.item_id: r for r in ExperimentResult.objects.filter(experiment=experiment, item_id__in=ids)
            .prefetch_related("scores__version")}
    theirs = {} if other is None else {
        r.item_id: r for r in ExperimentResult.objects.filter(experiment=other, item_id__in=ids)
        .prefetch_related("scores__version")}
    rows = []
    for item in items:
        variant = _side(mine.get(item.pk))
        if other is None:
            scored = _side(mine.get(item.pk), ExperimentScore.Target.EXPECTED).scores
            baseline = Side(output=expected_text(item), scores=scored or {})
        else:
            baseline = _side(theirs.get(item.pk))
        diff = word_diff(baseline.output, variant.output) if (
            baseline.output is not None and variant.output is not None) else []
        rows.append(Row(item=item, variant=variant, baseline=baseline, diff=diff))
    return rows


def experiment_summary(*, experiment: Experiment,
                       target: str = ExperimentScore.Target.OUTPUT) -> dict[str, Any]:
    """Totals of a run: results by status, tokens, cost, mean latency, and each evaluator's
    average (booleans as the share true) over the scores it gave."""
    results = ExperimentResult.objects.filter(experiment=experiment)
    figures = results.aggregate(
        ok=Count("id", filter=Q(status=ExperimentResult.Status.OK)),
        errors=Count("id", filter=Q(status=ExperimentResult.Status.ERROR)),
        input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"), cost=Sum("cost"),
        latency_ms=Avg("latency_ms", filter=Q(status=ExperimentResult.Status.OK)))
    scores = (ExperimentScore.objects.filter(result__experiment=experiment, target=target)
              .values("evaluator", "name")
              .annotate(average=Avg("value"), count=Count("id", filter=Q(error="")),
                        errors=Count("id", filter=~Q(error="")))
              .order_by("evaluator"))
    if figures["latency_ms"] is not None:
        figures["latency_ms"] = round(figures["latency_ms"])
    return {**figures, "scores": {s["evaluator"]: s for s in scores}}
