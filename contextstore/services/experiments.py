"""Experiments (issue 50): a dataset's items sent again with a variant (system prompt, message
template, model, params) to the workspace's playground endpoint (services/replays.py), each
output scored by the experiment's evaluators and compared with a baseline (the items' expected
outputs, or another experiment).

A run is a worker's job, never a web request's: `experiment_start` queues it and hands its id to
the broker after commit; `experiment_run` (the task) sends the items one by one, oldest first,
each claimed by its ExperimentResult row before it is sent (unique per experiment and item), so:
- a retried or redelivered task sends nothing twice: an item with a finished result is skipped,
  one another worker is sending is left to it;
- a run whose worker died continues where it stopped: the next delivery (or Resume) sends the
  items without a result, and the one claimed by the dead worker once its claim is older than a
  send can take (PLAYGROUND_TIMEOUT);
- one item's failure (the endpoint's error, no model to send to) is that item's result, and the
  run goes on;
- a task sends for at most RUN_SECONDS, then queues the rest as a new task, so no message stays
  unacknowledged long enough for the broker to deliver it twice.
"""

import difflib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from contextstore import provider_request
from contextstore.errors import Conflict
from contextstore.experimentspec import BUILTIN_EVALUATORS
from contextstore.llm_models import call_cost
from contextstore.models import (
    AuditLog,
    Dataset,
    DatasetItem,
    Evaluator,
    EvaluatorVersion,
    Experiment,
    ExperimentResult,
    ExperimentScore,
)
from contextstore.outbox import publish_after_commit
from contextstore.redaction import redact, use_workspace
from contextstore.selectors.experiments import claim_after, expected_text, experiment_stalled
from contextstore.services.common import Actor, audit
from contextstore.services.evaluators import EvaluationResult, evaluate
from contextstore.services.replays import ReplayFailed, playground_configured, playground_endpoint
from contextstore.services.replays import chat_send as chat_completion

logger = logging.getLogger(__name__)
EXPERIMENT_TASK = "contextstore.tasks.run_experiment"  # by name: services sit below tasks
RUN_SECONDS = 60.0  # one task's share; the rest is queued as a new task
BATCH = 100  # items read at a time
DONE = (ExperimentResult.Status.OK, ExperimentResult.Status.ERROR)
PENDING = (Experiment.Status.QUEUED, Experiment.Status.RUNNING)


# ------------------------------------------------------------------ creating and starting

def experiment_create(*, dataset: Dataset, actor: Actor, name: str, system_prompt: str = "",
                      template: str = "", model: str = "", params: dict[str, Any] | None = None,
                      baseline: Experiment | None = None,
                      evaluators: list[str] | None = None) -> Experiment:
    """A draft experiment of the dataset, its variant checked by its door (experimentspec); the
    baseline, when named, is an experiment of the same dataset (checked by the door too)."""
    with transaction.atomic():
        experiment = Experiment.objects.create(
            workspace_id=dataset.workspace_id, dataset=dataset, name=name, system_prompt=system_prompt,
            template=template, model=model, params=params or {}, baseline=baseline,
            evaluators=evaluators or [], created_by=actor.user, actor=actor.label[:200])
        audit(actor=actor, action="experiment.create", target=experiment, workspace=dataset.workspace,
              dataset=dataset.pk, model=model, baseline=baseline.pk if baseline else None)
    return experiment


def experiment_start(*, experiment: Experiment, actor: Actor) -> Experiment:
    """Queue the run: every item without a successful result is sent (a first run sends them
    all; a run again sends the failed and the missing ones, never a finished one twice).
    Refused while a run is pending or without an endpoint."""
    if not playground_configured(experiment.workspace):
        raise Conflict("No playground endpoint is configured (PLAYGROUND_BASE_URL).")
    with transaction.atomic():
        taken = Experiment.objects.select_for_update().get(pk=experiment.pk)
        if taken.is_pending and not experiment_stalled(taken):
            raise Conflict("This experiment is running already.")
        ExperimentResult.objects.filter(experiment=taken, status=ExperimentResult.Status.ERROR).delete()
        now = timezone.now()
        Experiment.objects.filter(pk=taken.pk).update(
            status=Experiment.Status.QUEUED, finished_at=None, touched_at=now,
            item_count=DatasetItem.objects.filter(dataset_id=taken.dataset_id).count())
        _count(taken)
        audit(actor=actor, action="experiment.run", target=taken, workspace=experiment.workspace,
              dataset=taken.dataset_id)
    transaction.on_commit(lambda: publish_after_commit(send_experiment, experiment.pk))
    experiment.refresh_from_db()
    return experiment


def send_experiment(experiment_id: Any, countdown: float | None = None) -> None:
    """Hand the run to the broker (to start after `countdown` seconds); when that fails the run
    shows as stalled and can be resumed."""
    try:
        current_app.tasks[EXPERIMENT_TASK].apply_async((int(experiment_id),), countdown=countdown or 0)
    except Exception:  # noqa: BLE001 - any broker failure
        logger.exception("could not send experiment %s to the broker", experiment_id)


# ------------------------------------------------------------------ the worker's part

def experiment_run(*, experiment_id: int, seconds: float = RUN_SECONDS) -> Experiment | None:
    """Send the items that have no result yet (see the module's docstring); queue the rest as a
    new task after `seconds`. Nothing for an experiment gone or not pending."""
    taken = Experiment.objects.filter(pk=experiment_id, status__in=PENDING).update(
        status=Experiment.Status.RUNNING, touched_at=timezone.now())
    if not taken:
        return None
    experiment = Experiment.objects.select_related("workspace").get(pk=experiment_id)
    if experiment.started_at is None:
        Experiment.objects.filter(pk=experiment.pk, started_at__isnull=True).update(started_at=timezone.now())
    use_workspace(experiment.workspace)
    evaluators = experiment_evaluators(experiment)
    deadline = time.monotonic() + seconds
    for item in _unsent(experiment):
        result = _claim(experiment, item)
        if result is None:
            continue
        _send_item(experiment, item, result)
        _score(experiment, item, result, evaluators)
        _count(experiment)
        if time.monotonic() > deadline:
            transaction.on_commit(lambda: publish_after_commit(send_experiment, experiment.pk))
            experiment.refresh_from_db()
            return experiment
    return _finish(experiment)


def _unsent(experiment: Experiment) -> Iterator[DatasetItem]:
    """The dataset's items, oldest first, in keyset batches, without those finished."""
    last = 0
    while True:
        finished = ExperimentResult.objects.filter(experiment=experiment, status__in=DONE).values("item_id")
        items = list(DatasetItem.objects.filter(dataset_id=experiment.dataset_id, id__gt=last)
                     .exclude(id__in=finished).order_by("id")[:BATCH])
        yield from items
        if len(items) < BATCH:
            return
        last = items[-1].pk


def _claim(experiment: Experiment, item: DatasetItem) -> ExperimentResult | None:
    """The item's result row, made `running` for this worker; None when it is finished or
    another live worker is sending it."""
    now = timezone.now()
    try:
        with transaction.atomic():
            return ExperimentResult.objects.create(
                workspace_id=experiment.workspace_id, experiment=experiment, item=item,
                status=ExperimentResult.Status.RUNNING, started_at=now)
    except IntegrityError:
        pass
    # A claim older than any send can take is a dead worker's: taken over.
    row = ExperimentResult.objects.filter(experiment=experiment, item=item,
                                          status=ExperimentResult.Status.RUNNING,
                                          started_at__lt=now - claim_after())
    if not row.update(started_at=now):
        return None
    return ExperimentResult.objects.get(experiment=experiment, item=item)


def _item_request(item: DatasetItem) -> tuple[list[Any], list[Any], list[Any], dict[str, Any], str]:
    """(system, messages, tools, params, model) as the item recorded them: a call's request, or
    a range's events that carry a role, as messages."""
    data = item.input
    if item.kind == DatasetItem.Kind.CALL and isinstance(data, dict):
        source = (item.metadata or {}).get("source") or {}
        return (list(data.get("system") or []), list(data.get("messages") or []),
                list(data.get("tools") or []), dict(data.get("params") or {}), str(source.get("model") or ""))
    messages = [{k: e[k] for k in ("role", "content", "parts") if k in e}
                for e in (data if isinstance(data, list) else []) if isinstance(e, dict) and e.get("role")]
    return [], messages, [], {}, ""


def experiment_body(experiment: Experiment, item: DatasetItem) -> dict[str, Any]:
    """The chat-completions body the variant sends for the item: the recorded request with the
    system prompt replaced, the last user message through the template, the model and params
    laid over the recorded ones (streaming left out: the answer is read whole)."""
    system, messages, tools, params, recorded_model = _item_request(item)
    turns = provider_request.chat(system=system, messages=messages)
    if experiment.system_prompt:
        kept = [t for t in turns if t.role != "system" or t.history]
        turns = [provider_request.Turn("system", experiment.system_prompt, history=False), *kept]
    if experiment.template:
        users = [t for t in turns if t.role == "user"]
        if users:
            users[-1].text = experiment.template.replace("{input}", users[-1].text)
        else:
            turns.append(provider_request.Turn("user", experiment.template.replace("{input}", "")))
    params = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
    params.update(experiment.params or {})
    model = experiment.model or recorded_model
    return provider_request.openai_body(model=model, turns=turns, tools=tools, params=params)


def _send_item(experiment: Experiment, item: DatasetItem, result: ExperimentResult) -> None:
    """Send one item and keep its outcome on its result (an error is the item's, never the run's)."""
    started = time.monotonic()
    fields: dict[str, Any] = {"request": None}
    try:
        body = experiment_body(experiment, item)
        # Sent as kept: a secret in a prompt reaches the endpoint as its marker, never stored.
        body, _ = redact(use_workspace(experiment.workspace), body)
        fields["request"] = body
        fields["model"] = str(body.get("model") or "")[:200]
        if not fields["model"]:
            raise ReplayFailed("No model: the item recorded none; name one for the experiment.")
        answer = chat_completion(body, *playground_endpoint(experiment.workspace))
        usage = {k: answer[k] for k in ("input_tokens", "output_tokens") if answer[k] is not None}
        fields.update(status=ExperimentResult.Status.OK, output=answer["answer"],
                      tool_calls=answer["tool_calls"], finish_reason=answer["finish_reason"],
                      input_tokens=answer["input_tokens"], output_tokens=answer["output_tokens"],
                      cost=call_cost(fields["model"], usage), error="")
    except ReplayFailed as exc:
        fields.update(status=ExperimentResult.Status.ERROR, error=str(exc)[:500])
    except Exception as exc:  # noqa: BLE001 - a bug on one item is that item's error, not the run's
        logger.exception("experiment %s item %s failed", experiment.pk, item.pk)
        fields.update(status=ExperimentResult.Status.ERROR, error=f"{type(exc).__name__}: {exc}"[:500])
    fields.update(latency_ms=int((time.monotonic() - started) * 1000), finished_at=timezone.now())
    for key, value in fields.items():
        setattr(result, key, value)
    # Only this worker's claim is finished: one taken over meanwhile belongs to the other.
    ExperimentResult.objects.filter(pk=result.pk, status=ExperimentResult.Status.RUNNING,
                                    started_at=result.started_at).update(**fields)


def _count(experiment: Experiment) -> None:
    counts = ExperimentResult.objects.filter(experiment_id=experiment.pk).aggregate(
        ok=Count("id", filter=Q(status=ExperimentResult.Status.OK)),
        error=Count("id", filter=Q(status=ExperimentResult.Status.ERROR)))
    Experiment.objects.filter(pk=experiment.pk).update(
        done_count=counts["ok"] + counts["error"], error_count=counts["error"], touched_at=timezone.now())


def _finish(experiment: Experiment) -> Experiment:
    """Done once every item has a finished result. Items left are claimed by another worker,
    live or dead: the run looks again once the newest claim could be taken over (a live
    worker's is finished by then, a dead one's is sent again)."""
    _count(experiment)
    experiment.refresh_from_db()
    left = DatasetItem.objects.filter(dataset_id=experiment.dataset_id).exclude(
        id__in=ExperimentResult.objects.filter(experiment=experiment, status__in=DONE).values("item_id"))
    if left.exists():
        claims = ExperimentResult.objects.filter(experiment=experiment, status="running")
        newest = claims.order_by("-started_at").values_list("started_at", flat=True).first()
        wait = claim_after().total_seconds()
        if newest is not None:
            wait -= (timezone.now() - newest).total_seconds()
        transaction.on_commit(lambda: publish_after_commit(
            lambda pk: send_experiment(pk, countdown=max(wait, 1.0)), experiment.pk))
        return experiment
    with transaction.atomic():
        if Experiment.objects.filter(pk=experiment.pk, status=Experiment.Status.RUNNING).update(
                status=Experiment.Status.DONE, finished_at=timezone.now()):
            experiment.refresh_from_db()
            audit(actor=Actor(AuditLog.ActorType.WORKER, "worker"), action="experiment.done",
                  target=experiment, workspace=experiment.workspace, items=experiment.done_count,
                  errors=experiment.error_count)
    return experiment


# ------------------------------------------------------------------ scoring

@dataclass
class Subject:
    """What an evaluator judges: an item's input, one output (the variant's, or the item's
    expected one) as text and as an assistant message, the expected output's text, and the
    output's figures (services/evaluators.py's `call_data`)."""

    input: Any
    text: str
    message: dict[str, Any]
    expected: str | None
    call_data: dict[str, Any]


@dataclass
class ExperimentEvaluator:
    key: str  # "builtin:<name>" or an evaluator's id
    name: str
    # Whether it judges the expected output too (the dataset's column): not when it compares
    # with it (the built-ins) or needs a sent call's figures (cost and latency limits).
    judges_expected: bool
    judge: Callable[[Subject], EvaluationResult]
    version: EvaluatorVersion | None = None


def _exact_match(subject: Subject) -> EvaluationResult:
    if subject.expected is None:
        return EvaluationResult(None, "boolean", error="The item has no expected output.")
    same = " ".join(subject.text.split()) == " ".join(subject.expected.split())
    return EvaluationResult(same, "boolean", "The output equals the expected output (whitespace aside)."
                            if same else "The output differs from the expected output.")


def _similarity(subject: Subject) -> EvaluationResult:
    if subject.expected is None:
        return EvaluationResult(None, "numeric", error="The item has no expected output.")
    ratio = difflib.SequenceMatcher(None, subject.text, subject.expected, autojunk=False).ratio()
    return EvaluationResult(round(ratio, 4), "numeric",
                            "difflib's ratio of the output to the expected output.")


BUILTINS = {key: ExperimentEvaluator(key, BUILTIN_EVALUATORS[key], False, judge)
            for key, judge in (("builtin:exact_match", _exact_match), ("builtin:similarity", _similarity))}
NO_FIGURES = (Evaluator.Kind.COST_LIMIT, Evaluator.Kind.LATENCY_LIMIT)


def _workspace_evaluator(evaluator: Evaluator) -> ExperimentEvaluator:
    version = evaluator.latest

    def judge(subject: Subject) -> EvaluationResult:
        return evaluate(version, input=subject.input, output=subject.message, call_data=subject.call_data)

    return ExperimentEvaluator(str(evaluator.pk), evaluator.name, evaluator.kind not in NO_FIGURES, judge,
                               version)


def _missing(subject: Subject) -> EvaluationResult:
    return EvaluationResult(None, "numeric", error="No such evaluator in this workspace (deleted?).")


def experiment_evaluators(experiment: Experiment) -> list[ExperimentEvaluator]:
    """The evaluators the experiment chose: the built-in ones, and the workspace's own
    (services/evaluators.py's `evaluate`, with each one's newest version when the run looks it
    up); an id that names none of the workspace's (deleted since) scores as an error."""
    ids = [int(key) for key in experiment.evaluators or [] if key.isdigit()]
    own = {str(e.pk): e for e in Evaluator.objects.filter(workspace_id=experiment.workspace_id, pk__in=ids)
           .select_related("workspace")}
    chosen = []
    for key in experiment.evaluators or []:
        if key in BUILTINS:
            chosen.append(BUILTINS[key])
        elif key in own and own[key].latest is not None:
            chosen.append(_workspace_evaluator(own[key]))
        else:
            chosen.append(ExperimentEvaluator(key, f"evaluator {key}", True, _missing))
    return chosen


def _score_fields(verdict: EvaluationResult) -> dict[str, Any]:
    value, string_value = verdict.value, ""
    if verdict.error:
        value = None
    elif verdict.data_type == "boolean":
        string_value, value = ("true", 1.0) if value else ("false", 0.0)
    elif verdict.data_type == "categorical":
        string_value, value = str(value)[:200], None
    elif value is not None:
        value = float(value)
    return {"data_type": "" if verdict.error else verdict.data_type, "value": value,
            "string_value": string_value, "reason": str(verdict.reason or ""),
            "error": str(verdict.error or "")[:500], "raw": str(verdict.raw or "")}


def _item_input(item: DatasetItem) -> Any:
    """An item's input as an evaluator reads it: a call's messages, a range's events."""
    if isinstance(item.input, dict):
        return item.input.get("messages") or item.input
    return item.input


def _subjects(experiment: Experiment, item: DatasetItem,
              result: ExperimentResult) -> list[tuple[str, Subject]]:
    expected = expected_text(item)
    answer = {"role": "assistant", "content": result.output,
              **({"tool_calls": result.tool_calls} if result.tool_calls else {})}
    figures = {"model": result.model, "cost": None if result.cost is None else float(result.cost),
               "latency_ms": result.latency_ms, "tool_calls": result.tool_calls}
    subjects: list[tuple[str, Subject]] = [(ExperimentScore.Target.OUTPUT,
                 Subject(_item_input(item), result.output, answer, expected, figures))]
    if experiment.baseline_id is None and expected is not None:
        message = item.output if isinstance(item.output, dict) else {"role": "assistant", "content": expected}
        source = (item.metadata or {}).get("source") or {}
        subjects.append((ExperimentScore.Target.EXPECTED, Subject(
            _item_input(item), expected, message, expected,
            {"model": source.get("model") or "", "tool_calls": message.get("tool_calls") or []})))
    return subjects


def _score(experiment: Experiment, item: DatasetItem, result: ExperimentResult,
           evaluators: list[ExperimentEvaluator]) -> None:
    """Each evaluator's verdict on the output (and, when the baseline is the dataset, on the
    expected output); kept once per (result, target, evaluator): a rescoring replaces it."""
    if not evaluators or result.status != ExperimentResult.Status.OK:
        return
    for target, subject in _subjects(experiment, item, result):
        for evaluator in evaluators:
            if target == ExperimentScore.Target.EXPECTED and not evaluator.judges_expected:
                continue
            try:
                verdict = evaluator.judge(subject)
            except Exception as exc:  # noqa: BLE001 - an evaluator's failure is its score's error
                logger.exception("evaluator %s failed on experiment result %s", evaluator.key, result.pk)
                verdict = EvaluationResult(None, "numeric", error=f"{type(exc).__name__}: {exc}")
            ExperimentScore.objects.update_or_create(
                workspace_id=experiment.workspace_id, result=result, target=target, evaluator=evaluator.key,
                defaults={"name": evaluator.name[:100], "version": evaluator.version,
                          **_score_fields(verdict)})
