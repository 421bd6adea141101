"""Replay: send a recorded LLM call again, as it was or with messages edited, to the playground
endpoint (any OpenAI-compatible chat-completions URL: PLAYGROUND_BASE_URL, PLAYGROUND_API_KEY,
or a workspace's own in PLAYGROUND_WORKSPACES),
and keep what came back as a CallReplay on the call, audited.

A replay is a worker job, never work of a web request (ten replays from one editor once held
every web thread): the request checks what is asked, keeps the body to send and a CallReplay
`queued`, and hands its id to the broker after commit (`replay_request`); a worker sends it,
bounded by PLAYGROUND_TIMEOUT, and keeps the outcome on the same row (`replay_run`); the page
follows the row. At most PLAYGROUND_MAX_PER_USER replays of one person and PLAYGROUND_MAX_PENDING
in all are queued or running at once; more are refused (429) before anything is kept. A row
left pending longer than the timeout allows (no worker, a lost message) is failed when read
(`replays_fail_stale`), so it neither spins on the page nor holds a slot.

A failure (no answer in time, an error status, an answer that is no chat completion) is kept
as a replay with status "error" and its reason, never as an answer. The key is sent to the
endpoint only; it is never stored or shown.
"""

import json
import logging
import time
from datetime import timedelta
from typing import Any

import httpx
from celery import current_app
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from contextstore import provider_request
from contextstore.errors import Conflict, DomainError, InvalidInput
from contextstore.llm_models import call_cost
from contextstore.models import AuditLog, CallReplay, StoredText, Thread, Workspace
from contextstore.outbox import publish_after_commit
from contextstore.redaction import redact, use_workspace
from contextstore.selectors.calls import LLMCall, llm_call_sent
from contextstore.services.common import Actor, audit
from contextstore.services.renders import texts_keep
from contextstore.usage import read_usage

logger = logging.getLogger(__name__)
MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # a chat completion is small; more is a broken endpoint
REPLAY_TASK = "contextstore.tasks.replay_call"  # by name: services sit below contextstore.tasks
PENDING = (CallReplay.Status.QUEUED, CallReplay.Status.RUNNING)


class TooManyReplays(DomainError):
    """A person (or everyone) has as many replays pending as allowed; the answer is 429."""

    code = "too_many_replays"
    status = 429


class ReplayFailed(Exception):
    """The endpoint gave no usable answer; the message says why."""


def playground_endpoint(workspace: Workspace) -> tuple[str, str]:
    """(base URL, key) replays of this workspace's calls go to: its own (PLAYGROUND_WORKSPACES,
    by slug; an own URL never gets the global key), else the deployment's."""
    own = settings.PLAYGROUND_WORKSPACES.get(workspace.slug)
    if isinstance(own, dict) and own.get("base_url"):
        return str(own["base_url"]), str(own.get("api_key") or "")
    return settings.PLAYGROUND_BASE_URL, settings.PLAYGROUND_API_KEY


def playground_configured(workspace: Workspace) -> bool:
    return bool(playground_endpoint(workspace)[0])


def replay_turns(*, thread: Thread, call: LLMCall) -> tuple[list[provider_request.Turn], dict[str, Any]]:
    """The call's request as turns, and what was sent (llm_call_sent); refused when nothing was
    recorded to send again."""
    sent = llm_call_sent(thread=thread, call=call)
    if sent["source"] is None:
        raise InvalidInput("This call recorded neither a render nor its messages: "
                           "there is nothing to replay.")
    return provider_request.chat(system=sent["system"], messages=sent["messages"]), sent


def replay_request(*, thread: Thread, call: LLMCall, actor: Actor, model: str = "",
                   edits: dict[int, str] | None = None) -> CallReplay:
    """Queue the call to be sent again (with `edits`: {turn index: new text}): checked and kept
    now, sent by a worker. Refused (nothing kept) without an endpoint, a recorded request or a
    model, or over the concurrency caps."""
    if not playground_configured(thread.workspace):
        raise Conflict("No playground endpoint is configured (PLAYGROUND_BASE_URL).")
    turns, sent = replay_turns(thread=thread, call=call)
    edited = []
    for index, text in sorted((edits or {}).items()):
        if not 0 <= index < len(turns):
            raise InvalidInput(f"Message {index + 1} is not in this call's request.",
                               details={"edits": "unknown message"})
        if turns[index].text != text:
            turns[index].text = text
            edited.append(index)
    model = (model or call.model).strip()[:200]
    if not model:
        raise InvalidInput("Name the model to send the call to.", details={"model": "required"})
    params = {k: v for k, v in sent["params"].items() if k not in ("stream", "stream_options")}
    body = provider_request.openai_body(model=model, turns=turns, tools=sent["tools"], params=params)
    replays_fail_stale()
    with transaction.atomic():
        if actor.user is not None:  # one person's requests one at a time, so the cap is exact
            list(User.objects.select_for_update().filter(pk=actor.user.pk).values_list("pk"))
        _check_caps(actor)
        # The request is kept redacted, and the worker sends what is kept: a secret typed into
        # an edit reaches the endpoint as its [REDACTED:kind] marker, never a stored copy (nor
        # the broker's message, which names the replay alone).
        kept, _ = redact(use_workspace(thread.workspace), body)
        [request_hash] = texts_keep(workspace_id=thread.workspace_id, texts=[provider_request.dumps(kept)])
        replay = CallReplay.objects.create(
            workspace_id=thread.workspace_id, thread=thread, call_seq=call.seq, model=model,
            edited=edited, request_hash=request_hash, actor=actor.label[:200], user=actor.user,
            status=CallReplay.Status.QUEUED)
        audit(actor=actor, action="call.replay.request", target=replay, workspace=thread.workspace,
              thread=thread.pk, call_seq=call.seq, model=model, edited=edited)
    transaction.on_commit(lambda: publish_after_commit(send_replay, replay.pk))
    return replay


def _mine(actor: Actor) -> Q:
    return Q(user=actor.user) if actor.user is not None else Q(user__isnull=True, actor=actor.label[:200])


def _check_caps(actor: Actor) -> None:
    pending = CallReplay.objects.filter(status__in=PENDING)
    mine, cap = pending.filter(_mine(actor)).count(), settings.PLAYGROUND_MAX_PER_USER
    if mine >= cap:
        raise TooManyReplays(f"You have {mine} replays pending (at most {cap} at once); "
                             "wait for one to finish.", details={"pending": mine, "limit": cap})
    everyone, cap = pending.count(), settings.PLAYGROUND_MAX_PENDING
    if everyone >= cap:
        raise TooManyReplays(f"{everyone} replays are pending (at most {cap} at once); try again "
                             "in a moment.", details={"pending": everyone, "limit": cap})


def send_replay(replay_id: Any) -> None:
    """Hand the replay to the broker; when that fails the row stays queued and is failed as
    stale when next read (the person sees why and can replay again)."""
    try:
        current_app.tasks[REPLAY_TASK].delay(int(replay_id))
    except Exception:  # noqa: BLE001 - any broker failure
        logger.exception("could not send replay %s to the broker", replay_id)


def stale_after() -> timedelta:
    """How long a replay may stay pending: the send's own timeout, plus time to wait for a
    worker (PLAYGROUND_QUEUE_SECONDS)."""
    return timedelta(seconds=settings.PLAYGROUND_TIMEOUT + settings.PLAYGROUND_QUEUE_SECONDS)


def replays_fail_stale() -> int:
    """Fail the replays pending for longer than a worker could need (none took them, or it died)."""
    late = CallReplay.objects.filter(status__in=PENDING, created_at__lt=timezone.now() - stale_after())
    return late.update(status=CallReplay.Status.ERROR,
                       error="No worker sent this replay in time; replay it again.")


def replay_run(*, replay_id: int) -> CallReplay | None:
    """The worker's part: send the queued replay and keep the outcome. A replay already taken
    (a message delivered twice) or gone is left alone: it is sent at most once."""
    taken = CallReplay.objects.filter(pk=replay_id, status=CallReplay.Status.QUEUED).update(
        status=CallReplay.Status.RUNNING, started_at=timezone.now())
    if not taken:
        return None
    replay = CallReplay.objects.select_related("thread__workspace", "user").get(pk=replay_id)
    kept = StoredText.objects.filter(workspace_id=replay.workspace_id, sha256=replay.request_hash).first()
    started = time.monotonic()
    fields: dict[str, Any]
    try:
        if kept is None:  # erased while it waited
            raise ReplayFailed("The request was erased before a worker sent it.")
        body = json.loads(kept.text)
        endpoint = playground_endpoint(replay.thread.workspace)
        fields = {"status": CallReplay.Status.OK, **chat_send(body, *endpoint)}
    except ReplayFailed as exc:
        fields = {"status": CallReplay.Status.ERROR, "error": str(exc)[:500]}
    fields["latency_ms"] = int((time.monotonic() - started) * 1000)
    if fields["status"] == CallReplay.Status.OK:
        usage = {k: v for k, v in (("input_tokens", fields["input_tokens"]),
                                   ("output_tokens", fields["output_tokens"])) if v is not None}
        fields["cost"] = call_cost(replay.model, usage)
    actor = Actor(AuditLog.ActorType.USER if replay.user else AuditLog.ActorType.WORKER, replay.actor,
                  user=replay.user)
    with transaction.atomic():
        # Only a replay still running is finished: one failed as stale meanwhile stays failed.
        if not CallReplay.objects.filter(pk=replay.pk, status=CallReplay.Status.RUNNING).update(**fields):
            return CallReplay.objects.get(pk=replay.pk)
        replay.refresh_from_db()
        audit(actor=actor, action="call.replay", target=replay, workspace=replay.thread.workspace,
              thread=replay.thread_id, call_seq=replay.call_seq, model=replay.model, edited=replay.edited,
              status=replay.status, error=replay.error)
    return replay


def chat_send(body: dict[str, Any], base_url: str, key: str) -> dict[str, Any]:
    """One chat completion from the endpoint, as CallReplay fields."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = settings.PLAYGROUND_TIMEOUT
    late = ReplayFailed(f"The endpoint did not answer within {timeout:g} s.")
    # httpx's timeout bounds each socket operation; the deadline bounds an answer trickled in.
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    try:
        with httpx.stream("POST", url, json=body, headers=headers,
                          timeout=httpx.Timeout(timeout)) as response:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise late
                if sum(map(len, chunks)) > MAX_RESPONSE_BYTES:
                    raise ReplayFailed(f"The endpoint's answer is over {MAX_RESPONSE_BYTES} bytes.")
    except httpx.TimeoutException as exc:
        raise late from exc
    except httpx.HTTPError as exc:
        raise ReplayFailed(f"Could not reach the endpoint: {exc}") from exc
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if response.status_code >= 400:
        raise ReplayFailed(f"The endpoint answered HTTP {response.status_code}: {text[:300]}")
    try:
        payload = json.loads(text)
        choice = payload["choices"][0]
        message = choice["message"]
        usage = read_usage(payload)  # the same reading as every logged call's usage
        calls = message.get("tool_calls") or []
        return {"answer": message.get("content") or "",
                "tool_calls": [{"id": c.get("id", ""), "name": c["function"]["name"],
                                "arguments": c["function"].get("arguments", "")} for c in calls],
                "finish_reason": str(choice.get("finish_reason") or "")[:40],
                "input_tokens": usage.input if usage is not None else None,
                "output_tokens": usage.output if usage is not None else None}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ReplayFailed(f"The endpoint's answer is not a chat completion "
                           f"({type(exc).__name__}: {exc}).") from exc
