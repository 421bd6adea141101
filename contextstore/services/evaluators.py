"""Evaluators: an LLM judge (through the workspace's playground endpoint, services/replays.py)
or a rule (a regular expression, a JSON schema, a tool-call check, a cost or latency limit)
that scores a call's or a session's output; kept in versions (an edit makes a new one).

`evaluate(version, input=, output=, call_data=)` is the one evaluation, with no write: the
online run below and experiments (a dataset run through a variant) both call it. A judge that
fails (no endpoint, no answer in time, an answer that is no score) gives a result with
`error` set and no value, never a made-up score.

The online run is a worker job in two steps. Beat's `evaluate_online` pass (evaluations_schedule)
looks, per enabled evaluator, at what arrived after its watermark (calls: LLMComplete rows by
id; sessions: quiet sessions by (last activity, id)), keeps an Evaluation row `queued` for each
one its sampling rule picks, and moves the watermark, in one transaction: a crash before the
commit leaves both as they were, after it both are kept, so nothing is missed or picked twice
(the unique (evaluator, subject) holds even if two passes overlap). Each queued row is sent to a
worker (`run_evaluation`), which takes it (queued → running, once), evaluates it and writes the
Score and the row's outcome in one transaction. A row whose message was lost, or whose worker
died, is sent again by a later pass (evaluations_recover), at most MAX_ATTEMPTS times.
"""

import hashlib
import json
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import jsonschema
import regex
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import F, Max, Q, Sum
from django.utils import timezone

from contextstore.errors import Conflict
from contextstore.models import (
    CallFigure,
    Dataset,
    DatasetItem,
    Evaluation,
    Evaluator,
    EvaluatorVersion,
    Event,
    Session,
    SessionModel,
    Workspace,
)
from contextstore.outbox import publish_after_commit
from contextstore.redaction import use_workspace
from contextstore.selectors.calls import (
    CALL_END,
    REPLY_WINDOW,
    LLMCall,
    call_start_of,
    llm_call_reply,
    llm_call_sent,
)
from contextstore.services.common import Actor, audit
from contextstore.services.replays import ReplayFailed, chat_send, playground_endpoint
from contextstore.services.scores import score_add
from contextstore.toolcalls import event_calls, result_call_id

logger = logging.getLogger(__name__)
RUN_TASK = "contextstore.tasks.run_evaluation"  # by name: services sit below contextstore.tasks
BATCH = 1000  # new calls (sessions) one pass looks at per evaluator: EVALUATE_EVERY sets the ceiling
MAX_ATTEMPTS = 3  # a row whose worker died this often is failed, not sent again
MAX_TEXT = 20_000  # characters of a subject's input or output put in a judge's prompt
REGEX_SECONDS = 1.0  # a pattern that backtracks longer than this fails the evaluation
SESSION_TOOLS = 500  # tool calls and failed results read from one session


@dataclass(frozen=True)
class EvaluationResult:
    """One evaluation's outcome: a value of `data_type` (Score.DataType's values: a number, a
    bool, a category) and the reason, or `error` (then value is None). `raw` is the judge's
    answer as it came."""

    value: float | bool | str | None
    data_type: str
    reason: str = ""
    error: str = ""
    raw: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def comment(self) -> str:
        return self.reason


def _failed(data_type: str, error: str, raw: str = "") -> EvaluationResult:
    return EvaluationResult(None, data_type, error=error[:2000], raw=raw)


# ------------------------------------------------------------------ the evaluation

def as_text(value: Any) -> str:
    """A subject's input or output as text: a string as it is, a message's content, messages as
    `role: text` lines, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "content" in value:
        content = value["content"]
        if isinstance(content, list):  # content parts
            return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        return as_text(content)
    if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
        return "\n\n".join(f"{m['role']}: {as_text(m)}" for m in value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_calls(output: Any, call_data: dict[str, Any]) -> list[dict[str, Any]]:
    calls = call_data.get("tool_calls")
    if calls is None and isinstance(output, dict):
        calls = output.get("tool_calls")
    return [c for c in calls or [] if isinstance(c, dict)]


def evaluate(version: EvaluatorVersion, *, input: Any, output: Any,  # noqa: A002 - the subject's input
             call_data: dict[str, Any] | None = None) -> EvaluationResult:
    """Evaluate one output (and the input that led to it) with this evaluator version; writes
    nothing. `input`/`output`: text, a message ({"role", "content", "tool_calls"}) or a list of
    messages. `call_data` (optional): the call's figures, as any of these keys:
    model, cost (USD), latency_ms, tool_calls ([{"name", "arguments"}]), tool_errors (names of
    tools whose result failed)."""
    kind = version.evaluator.kind
    data = call_data or {}
    if kind == Evaluator.Kind.LLM_JUDGE:
        return _judge(version, input, output)
    text = as_text(output)
    if kind == Evaluator.Kind.REGEX:
        config = version.config
        flags = regex.IGNORECASE if config.get("ignore_case") else 0
        try:
            found = regex.search(config["pattern"], text, flags=flags, timeout=REGEX_SECONDS)
        except TimeoutError:
            return _failed("boolean", f"The pattern took over {REGEX_SECONDS:g} s on this output.")
        passed = bool(found) == config.get("must_match", True)
        said = f"found at character {found.start()}: {found.group(0)[:100]!r}" if found else "not found"
        return EvaluationResult(passed, "boolean", f"The pattern was {said}.")
    if kind == Evaluator.Kind.JSON_SCHEMA:
        try:
            document = json.loads(text)
        except ValueError as exc:
            return EvaluationResult(False, "boolean", f"The output is not JSON: {exc}.")
        try:
            error = jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(version.config["schema"]).iter_errors(document))
        except Exception as exc:  # noqa: BLE001 - a $ref nothing resolves, a pattern it cannot run
            return _failed("boolean", f"The schema could not be applied: {exc}"[:500])
        if error is None:
            return EvaluationResult(True, "boolean", "The output satisfies the schema.")
        where = "/".join(map(str, error.absolute_path)) or "(the document)"
        return EvaluationResult(False, "boolean", f"At {where}: {error.message}")
    if kind == Evaluator.Kind.TOOL_CALL:
        return _tool_check(version.config, _tool_calls(output, data), data.get("tool_errors") or [])
    if kind == Evaluator.Kind.COST_LIMIT:
        return _limit(data.get("cost"), version.config["max_cost"], "cost", lambda v: f"${v:.6f}")
    if kind == Evaluator.Kind.LATENCY_LIMIT:
        return _limit(data.get("latency_ms"), version.config["max_ms"], "latency", lambda v: f"{v:.0f} ms")
    return _failed("boolean", f"Unknown evaluator kind {kind!r}.")


def evaluate_dataset(version: EvaluatorVersion, *,
                     dataset: Dataset) -> Iterator[tuple[DatasetItem, EvaluationResult]]:
    """The version run over a dataset's items (their input and the output they keep), oldest
    first, with no write: what an evaluator says of a dataset as recorded. An experiment runs a
    variant's outputs through evaluate() the same way. Items of another workspace are not read."""
    items = (DatasetItem.objects.filter(dataset=dataset, workspace_id=version.workspace_id)
             .order_by("id").iterator(chunk_size=100))
    for item in items:
        yield item, evaluate(version, input=item.input, output=item.output)


def _limit(value: Any, limit: float, what: str, show: Any) -> EvaluationResult:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return _failed("boolean", f"No {what} was recorded for this call.")
    passed = value <= limit
    return EvaluationResult(passed, "boolean",
                            f"The {what} was {show(value)}, {'within' if passed else 'over'} "
                            f"the limit of {show(limit)}.")


def _contains(have: Any, want: Any) -> bool:
    """`have` holds `want`: every key of an object (recursively), an equal value otherwise."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _contains(have[k], v) for k, v in want.items())
    return bool(have == want)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _tool_check(config: dict[str, Any], calls: list[dict[str, Any]], errors: list[Any]) -> EvaluationResult:
    check = config["check"]
    if check == "no_failed":
        if errors:
            return EvaluationResult(False, "boolean", f"Failed tools: {', '.join(map(str, errors))[:500]}.")
        return EvaluationResult(True, "boolean", "No tool result failed.")
    named = [c for c in calls if c.get("name") == config["tool"]]
    if check == "not_called":
        return EvaluationResult(not named, "boolean",
                                f"{config['tool']} was {'called' if named else 'not called'}.")
    if not named:
        called = ", ".join(str(c.get("name")) for c in calls) or "no tool"
        return EvaluationResult(False, "boolean", f"{config['tool']} was not called (called: {called}).")
    want = config.get("arguments")
    if want and not any(_contains(_arguments(c.get("arguments")), want) for c in named):
        return EvaluationResult(False, "boolean",
                                f"{config['tool']} was called, never with arguments holding "
                                f"{json.dumps(want, ensure_ascii=False)[:300]}.")
    return EvaluationResult(True, "boolean", f"{config['tool']} was called"
                            + (" with the arguments asked." if want else "."))


JUDGE_ANSWER = {
    "numeric": '{"score": <a number>, "reason": "<one or two sentences>"}',
    "boolean": '{"score": true or false, "reason": "<one or two sentences>"}',
    "categorical": '{"score": "<one of: %s>", "reason": "<one or two sentences>"}',
    "category": '{"score": "<a category, a few words>", "reason": "<one or two sentences>"}',
}


def judge_messages(version: EvaluatorVersion, input: Any, output: Any) -> list[dict[str, str]]:  # noqa: A002
    """What the judge is sent: the format of its answer, then the version's prompt filled in."""
    config = version.config
    shape = JUDGE_ANSWER[config["score_type"]]
    if config["score_type"] == "categorical":
        categories = config.get("categories")
        shape = shape % ", ".join(categories) if categories else JUDGE_ANSWER["category"]
    prompt = (version.prompt.replace("{{input}}", as_text(input)[-MAX_TEXT:])
              .replace("{{output}}", as_text(output)[-MAX_TEXT:]))
    return [{"role": "system", "content": "You are an evaluator. Answer with one JSON object and "
             f"nothing else: {shape}"},
            {"role": "user", "content": prompt}]


def _judge(version: EvaluatorVersion, input: Any, output: Any) -> EvaluationResult:  # noqa: A002
    score_type = version.config["score_type"]
    workspace: Workspace = version.evaluator.workspace
    base_url, key = playground_endpoint(workspace)
    if not base_url:
        return _failed(score_type, "No judge endpoint is configured (PLAYGROUND_BASE_URL).")
    body = {"model": version.model, "messages": judge_messages(version, input, output), "temperature": 0}
    try:
        answer = chat_send(body, base_url, key)["answer"]
    except ReplayFailed as exc:
        return _failed(score_type, f"The judge failed: {exc}")
    return judge_answer(version.config, answer)


def judge_answer(config: dict[str, Any], answer: str) -> EvaluationResult:
    """The judge's answer read as a score of the version's type, or an error saying why not."""
    score_type = config["score_type"]
    text = answer.strip()
    start, end = text.find("{"), text.rfind("}")
    try:
        parsed = json.loads(text[start:end + 1]) if 0 <= start < end else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or "score" not in parsed:
        return _failed(score_type, "The judge's answer is not a JSON object with a score.", answer)
    score, reason = parsed["score"], parsed.get("reason")
    reason = reason if isinstance(reason, str) else ""
    if score_type == "numeric":
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            return _failed(score_type, f"The judge's score {score!r} is not a number.", answer)
        value: float | bool | str = float(score)
    elif score_type == "boolean":
        if isinstance(score, str) and score.lower() in ("true", "false"):
            score = score.lower() == "true"
        if not isinstance(score, bool):
            return _failed(score_type, f"The judge's score {score!r} is not true or false.", answer)
        value = score
    else:
        categories = config.get("categories")
        if categories and score not in categories:
            return _failed(score_type, f"The judge's score {score!r} is not one of "
                           f"{', '.join(categories)}.", answer)
        if not isinstance(score, str) or not score.strip() or len(score) > 200 or "\x00" in score:
            return _failed(score_type, f"The judge's score {score!r} is not a category "
                           "(a name of at most 200 characters).", answer)
        value = score.strip()
    return EvaluationResult(value, score_type, reason[:10_000], raw=answer)


# ------------------------------------------------------------------ evaluators and versions

def evaluator_create(*, workspace: Workspace, actor: Actor, name: str, kind: str, target: str = "call",
                     sample_rate: float = 1.0, filter_agent: str = "", filter_model: str = "",
                     enabled: bool = True, model: str = "", prompt: str = "",
                     config: dict[str, Any] | None = None) -> Evaluator:
    """An evaluator and its version 1, from input its door checked (evaluatorspec). Its online
    run starts at what arrives after now: calls and sessions already stored are not scored."""
    newest = Event.objects.aggregate(newest=Max("pk"))["newest"] or 0
    use_workspace(workspace)  # the prompt and settings stored under the workspace's redaction rules
    try:
        with transaction.atomic():
            evaluator = Evaluator.objects.create(
                workspace=workspace, name=name, kind=kind, target=target, enabled=enabled,
                sample_rate=sample_rate, filter_agent=filter_agent, filter_model=filter_model,
                through_event=newest, through_at=timezone.now(), created_by=actor.user)
            _version_add(evaluator, actor, model=model, prompt=prompt, config=config or {})
            audit(actor=actor, action="evaluator.create", target=evaluator, workspace=workspace,
                  name=name, kind=kind, target_kind=target)
    except IntegrityError as exc:
        raise Conflict(f"An evaluator named {name!r} exists already.", details={"name": "taken"}) from exc
    return evaluator


def _version_add(evaluator: Evaluator, actor: Actor, *, model: str, prompt: str,
                 config: dict[str, Any]) -> EvaluatorVersion:
    number = (evaluator.versions.aggregate(n=Max("number"))["n"] or 0) + 1
    return EvaluatorVersion.objects.create(
        workspace_id=evaluator.workspace_id, evaluator=evaluator, number=number, model=model,
        prompt=prompt, config=config, created_by=actor.user, author_label=actor.label[:200])


def evaluator_update(*, evaluator: Evaluator, actor: Actor, fields: dict[str, Any] | None = None,
                     version: dict[str, Any] | None = None) -> Evaluator:
    """Change the evaluator's own fields (name, enabled, sample_rate, filters) and, when
    `version` (its model, prompt and config, checked whole by its door) differs from the
    newest, add a version: scores given before keep naming the version that gave them."""
    fields = {k: v for k, v in (fields or {}).items()
              if k in ("name", "enabled", "sample_rate", "filter_agent", "filter_model")}
    try:
        with transaction.atomic():
            locked = Evaluator.objects.select_for_update().get(pk=evaluator.pk)
            use_workspace(locked.workspace)
            for key, value in fields.items():
                setattr(locked, key, value)
            locked.save()
            added = None
            if version is not None:
                latest = locked.latest
                if (latest.model, latest.prompt, latest.config) != (
                        version["model"], version["prompt"], version["config"]):
                    added = _version_add(locked, actor, **version)
            audit(actor=actor, action="evaluator.update", target=locked, workspace=locked.workspace,
                  fields=sorted(fields), version=added.number if added else None)
    except IntegrityError as exc:
        raise Conflict(f"An evaluator named {fields.get('name')!r} exists already.",
                       details={"name": "taken"}) from exc
    return locked


# ------------------------------------------------------------------ the online run

def sampled(*, evaluator: Evaluator, subject: str) -> bool:
    """The sampling rule's pick: a hash of the evaluator and the subject below the rate, so a
    pass run again picks the same calls (and another evaluator other ones)."""
    if evaluator.sample_rate >= 1:
        return True
    digest = hashlib.sha256(f"{evaluator.pk}:{subject}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < evaluator.sample_rate


def _agent_ok(evaluator: Evaluator, session: Session) -> bool:
    return not evaluator.filter_agent or session.agent.casefold() == evaluator.filter_agent.casefold()


def _call_model(end: Event) -> str:
    figure = getattr(end, "figure", None)
    if figure is not None and figure.model:
        return figure.model
    return LLMCall(start=None, end=end).model


def _new_calls(evaluator: Evaluator, batch: int, top: int,
               cutoff: datetime) -> tuple[list[Evaluation], int]:
    """The evaluations of this workspace's LLMCompletes after the watermark up to `top` (the
    newest event older than `cutoff`: its reply may still be arriving, and a transaction that
    took an id before it may not have committed yet), and the new watermark: `top` once none
    is left below it, so a workspace without new calls does not scan others' again."""
    version = evaluator.latest
    rows: list[Evaluation] = []
    through = evaluator.through_event
    ends = list(Event.objects.filter(pk__gt=through, pk__lte=top, type=CALL_END,
                                     thread__workspace_id=evaluator.workspace_id)
                .select_related("thread__session", "figure").order_by("pk")[:batch])
    for end in ends:
        if end.created_at > cutoff:  # stored out of order: it waits, and so does the watermark
            return rows, through
        through = end.pk
        subject = f"call {end.pk}"
        session = end.thread.session
        if not sampled(evaluator=evaluator, subject=subject) or not _agent_ok(evaluator, session):
            continue
        if evaluator.filter_model and _call_model(end).casefold() != evaluator.filter_model.casefold():
            continue
        # seq: the LLMComplete's until the run names the call by its start's (as its score does)
        rows.append(Evaluation(workspace_id=evaluator.workspace_id, evaluator=evaluator, version=version,
                               session=session, thread=end.thread, seq=end.seq, subject=subject))
    return rows, max(through, top) if len(ends) < batch else through


def _new_sessions(evaluator: Evaluator, batch: int,
                  cutoff: datetime) -> tuple[list[Evaluation], datetime | None, int]:
    """The evaluations of the sessions quiet since `cutoff` whose last activity is after the
    watermark, and the new watermark."""
    version = evaluator.latest
    since, after = evaluator.through_at, evaluator.through_session
    quiet = Session.objects.filter(workspace_id=evaluator.workspace_id, last_activity_at__lte=cutoff)
    if since is not None:
        quiet = quiet.filter(Q(last_activity_at__gt=since) | Q(last_activity_at=since, pk__gt=after))
    rows: list[Evaluation] = []
    for session in quiet.order_by("last_activity_at", "pk")[:batch]:
        since, after = session.last_activity_at, session.pk
        subject = f"session {session.pk}"
        if not sampled(evaluator=evaluator, subject=subject) or not _agent_ok(evaluator, session):
            continue
        if evaluator.filter_model and not SessionModel.objects.filter(
                session=session, model__iexact=evaluator.filter_model).exists():
            continue
        rows.append(Evaluation(workspace_id=evaluator.workspace_id, evaluator=evaluator, version=version,
                               session=session, subject=subject))
    return rows, since, after


def evaluations_schedule(*, batch: int = BATCH, now: datetime | None = None) -> dict[str, int]:
    """Beat's pass: keep the evaluations the enabled evaluators' sampling rules pick among what
    arrived since their watermarks (one transaction per evaluator), send them to workers, and
    send again the ones lost or left by a dead worker. Returns what it did."""
    now = now or timezone.now()
    settle = now - timedelta(seconds=settings.EVALUATOR_SETTLE_SECONDS)
    quiet = now - timedelta(seconds=settings.EVALUATOR_SESSION_QUIET_SECONDS)
    queued = 0
    # the newest event old enough: the pk index read backwards, stopping at once
    top = (Event.objects.filter(created_at__lte=settle).order_by("-pk")
           .values_list("pk", flat=True).first()) or 0
    for pk in Evaluator.objects.filter(enabled=True).order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            evaluator = Evaluator.objects.select_for_update().filter(pk=pk, enabled=True).first()
            if evaluator is None:
                continue
            if evaluator.target == Evaluator.Target.CALL:
                rows, evaluator.through_event = _new_calls(evaluator, batch, top, settle)
            else:
                rows, evaluator.through_at, evaluator.through_session = _new_sessions(evaluator, batch, quiet)
            Evaluation.objects.bulk_create(rows, ignore_conflicts=True)
            evaluator.save(update_fields=["through_event", "through_at", "through_session"])
            ids = list(Evaluation.objects.filter(
                evaluator=evaluator, status=Evaluation.Status.QUEUED,
                subject__in=[r.subject for r in rows]).values_list("pk", flat=True))
            for evaluation_id in ids:
                transaction.on_commit(partial(publish_after_commit, send_evaluation, evaluation_id))
            queued += len(ids)
    return {"queued": queued, **evaluations_recover(now=now)}


def stale_after() -> timedelta:
    """How long an evaluation may stay queued or running before it is sent again: the judge's
    own timeout, plus time to wait for a worker (as a replay)."""
    return timedelta(seconds=settings.PLAYGROUND_TIMEOUT + settings.PLAYGROUND_QUEUE_SECONDS)


def evaluations_recover(*, now: datetime | None = None) -> dict[str, int]:
    """Send again the evaluations queued or running for longer than stale_after (a message
    lost, a worker that died mid-evaluation); fail those tried MAX_ATTEMPTS times."""
    late = (now or timezone.now()) - stale_after()
    Status = Evaluation.Status
    # a queued row's started_at is when a pass last sent it again (NULL: never)
    lost = Q(status=Status.QUEUED) & (Q(started_at__isnull=True, created_at__lt=late)
                                      | Q(started_at__lt=late))
    died = Q(status=Status.RUNNING, started_at__lt=late)
    gave_up = Evaluation.objects.filter(died, attempts__gte=MAX_ATTEMPTS).update(
        status=Status.ERROR, finished_at=timezone.now(),
        error=f"The worker stopped {MAX_ATTEMPTS} times while evaluating this; it is not tried again.")
    ids = list(Evaluation.objects.filter(lost | died).values_list("pk", flat=True)[:BATCH])
    # started_at marks when it was sent again, so the next pass waits stale_after before another send
    Evaluation.objects.filter(pk__in=ids).update(status=Status.QUEUED, started_at=timezone.now())
    for evaluation_id in ids:
        transaction.on_commit(partial(publish_after_commit, send_evaluation, evaluation_id))
    return {"resent": len(ids), "failed": gave_up}


def send_evaluation(evaluation_id: Any) -> None:
    """Hand the evaluation to the broker; when that fails the row stays queued and a later
    pass sends it again."""
    try:
        current_app.tasks[RUN_TASK].delay(int(evaluation_id))
    except Exception:  # noqa: BLE001 - any broker failure
        logger.exception("could not send evaluation %s to the broker", evaluation_id)


def call_subject(*, end: Event, start: Event | None = None) -> dict[str, Any]:
    """evaluate()'s input, output and call_data for the call this LLMComplete closes: what it
    sent, what it answered, its stored figures (CallFigure) and the tools that failed answering it."""
    thread = end.thread
    call = LLMCall(start=start or call_start_of(thread=thread, end=end), end=end)
    sent = llm_call_sent(thread=thread, call=call)
    reply = llm_call_reply(thread=thread, call=call)
    figure = CallFigure.objects.filter(event_id=end.pk).first()
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
    names = {c["id"]: c["name"] for c in calls if c["id"]}
    errors = []
    if names:
        for result in Event.objects.filter(thread=thread, seq__gt=call.seq, type="ToolResult",
                                           is_error=True).order_by("seq")[:REPLY_WINDOW]:
            answered = result_call_id(result.parts, result.data)
            if answered in names:
                errors.append(names[answered])
    # a measured 0 (start and end logged in one batch) measured nothing: the reported one then
    latency = figure.latency if figure is not None and figure.latency else call.latency_ms
    cost = figure.cost if figure is not None and figure.cost is not None else (
        float(call.cost) if call.end is not None and call.cost else None)
    system = [{"role": "system", "content": as_text(s)} for s in sent["system"]]
    return {"input": [*system, *sent["messages"]],
            "output": reply.as_message(),
            "call_data": {"model": call.model, "cost": cost, "latency_ms": latency, "tool_calls": calls,
                          "tool_errors": errors}}


def session_subject(*, session: Session) -> dict[str, Any]:
    """evaluate()'s input, output and call_data for a session: its first input, its last reply,
    its calls' summed cost and latency (CallFigure), its tool calls and failed tools (the first
    SESSION_TOOLS of each)."""
    events = Event.objects.filter(thread__session=session)
    first = (events.filter(Q(type="Input") | Q(type="Message", role="user"))
             .order_by("created_at", "pk").first())
    last = (events.filter(Q(type="LLMOutput") | Q(type="Message", role="assistant"))
            .order_by("-created_at", "-pk").first())
    figures = CallFigure.objects.filter(event__thread__session=session, event__type=CALL_END).aggregate(
        cost=Sum("cost"), latency=Sum("latency"))
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments}
             for e in events.filter(type="ToolCall").order_by("pk")[:SESSION_TOOLS]
             for c in event_calls(e.type, e.parts, e.data)]
    failed = events.filter(type="ToolResult", is_error=True).order_by("pk")[:SESSION_TOOLS]
    names = {c["id"]: c["name"] for c in calls if c["id"]}
    errors = [names.get(result_call_id(e.parts, e.data) or "", "a tool") for e in failed]
    return {"input": first.content if first else "",
            "output": {"role": "assistant", "content": last.content} if last else None,
            "call_data": {"cost": figures["cost"], "latency_ms": figures["latency"], "tool_calls": calls,
                          "tool_errors": errors}}


def _subject(evaluation: Evaluation) -> tuple[dict[str, Any] | None, int | None]:
    """evaluate()'s arguments for the evaluation's subject (None: the call is gone), and the
    seq that names the call (its start's, as its card and its score name it)."""
    kind, _, pk = evaluation.subject.partition(" ")
    if kind == "session":
        return session_subject(session=evaluation.session), None
    end = (Event.objects.filter(thread=evaluation.thread, pk=int(pk))
           .select_related("thread__workspace").first())
    if end is None:
        return None, evaluation.seq
    start = call_start_of(thread=end.thread, end=end)
    return call_subject(end=end, start=start), (start or end).seq


def evaluation_run(*, evaluation_id: int) -> Evaluation | None:
    """The worker's part: evaluate a queued evaluation and keep its Score (or its error). One
    already taken (a message delivered twice) or gone is left alone."""
    Status = Evaluation.Status
    taken = Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1)
    if not taken:
        return None
    evaluation = Evaluation.objects.select_related(
        "evaluator__workspace", "version__evaluator__workspace", "session", "thread").get(pk=evaluation_id)
    use_workspace(evaluation.evaluator.workspace)  # its redaction rules for the score and the answer
    subject, seq = _subject(evaluation)
    if subject is None:
        result = _failed("boolean", "The call was deleted before it was evaluated.")
    else:
        try:
            result = evaluate(evaluation.version, **subject)
        except (OperationalError, InterfaceError):
            raise  # the database: the task retries, and a later pass sends the row again
        except Exception as exc:  # noqa: BLE001 - a bug must show on the row, not only in a log
            logger.exception("evaluation %s failed", evaluation_id)
            result = _failed("boolean", f"The evaluation failed: {type(exc).__name__}: {exc}")
    with transaction.atomic():
        # Only a row still running is finished: one failed meanwhile as given up stays failed.
        running = Evaluation.objects.select_for_update().filter(pk=evaluation_id, status=Status.RUNNING)
        if not running.exists():
            return Evaluation.objects.get(pk=evaluation_id)
        fields: dict[str, Any] = {"raw": result.raw, "finished_at": timezone.now(), "seq": seq}
        if result.ok:
            evaluator = evaluation.evaluator
            actor = Actor.worker(f"evaluator {evaluator.name} v{evaluation.version.number}"[:200])
            score = score_add(session=evaluation.session, name=evaluator.name, data_type=result.data_type,
                              value=result.value, actor=actor, comment=result.reason,
                              thread=evaluation.thread, seq=seq)
            fields.update(status=Status.DONE, score=score)
        else:
            fields.update(status=Status.ERROR, error=result.error)
        Evaluation.objects.filter(pk=evaluation_id).update(**fields)
    evaluation.refresh_from_db()
    return evaluation

