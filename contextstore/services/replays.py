"""Replay: send a recorded LLM call again, as it was or with messages edited, to the playground
endpoint (any OpenAI-compatible chat-completions URL: PLAYGROUND_BASE_URL, PLAYGROUND_API_KEY,
or a workspace's own in PLAYGROUND_WORKSPACES),
and keep what came back as a CallReplay on the call, audited.

The request runs synchronously inside the dashboard request, bounded by PLAYGROUND_TIMEOUT: a
person clicked and waits for the answer, as in a provider's playground, and a job would add a
worker round trip for the same wait. A failure (no answer in time, an error status, an answer
that is no chat completion) is kept as a replay with status "error" and its reason, never as
an answer. The key is sent to the endpoint only; it is never stored or shown.
"""

import json
import time
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction

from contextstore import provider_request
from contextstore.errors import Conflict, InvalidInput
from contextstore.llm_models import call_cost
from contextstore.models import CallReplay, Thread, Workspace
from contextstore.redaction import redact, use_workspace
from contextstore.selectors.calls import LLMCall, llm_call_sent
from contextstore.services.common import Actor, audit
from contextstore.services.renders import texts_keep

MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # a chat completion is small; more is a broken endpoint


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


def call_replay(*, thread: Thread, call: LLMCall, actor: Actor, model: str = "",
                edits: dict[int, str] | None = None) -> CallReplay:
    """Send the call again (with `edits`: {turn index: new text}) and keep the outcome."""
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
    # The request is kept redacted (the endpoint gets it as the person wrote it): redacted
    # before it is hashed, so the stored text is the text its hash names.
    kept, _ = redact(use_workspace(thread.workspace), body)
    [request_hash] = texts_keep(workspace_id=thread.workspace_id, texts=[provider_request.dumps(kept)])
    started = time.monotonic()
    fields: dict[str, Any]
    try:
        fields = {"status": CallReplay.Status.OK, **_send(body, *playground_endpoint(thread.workspace))}
    except ReplayFailed as exc:
        fields = {"status": CallReplay.Status.ERROR, "error": str(exc)[:500]}
    fields["latency_ms"] = int((time.monotonic() - started) * 1000)
    if fields["status"] == CallReplay.Status.OK:
        usage = {k: v for k, v in (("input_tokens", fields["input_tokens"]),
                                   ("output_tokens", fields["output_tokens"])) if v is not None}
        fields["cost"] = call_cost(model, usage)
    with transaction.atomic():
        replay = CallReplay.objects.create(
            workspace_id=thread.workspace_id, thread=thread, call_seq=call.seq, model=model,
            edited=edited, request_hash=request_hash, actor=actor.label[:200], **fields)
        audit(actor=actor, action="call.replay", target=replay, workspace=thread.workspace,
              thread=thread.pk, call_seq=call.seq, model=model, edited=edited,
              status=replay.status, error=replay.error)
    return replay


def _send(body: dict[str, Any], base_url: str, key: str) -> dict[str, Any]:
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
        usage = payload.get("usage") or {}
        calls = message.get("tool_calls") or []
        return {"answer": message.get("content") or "",
                "tool_calls": [{"id": c.get("id", ""), "name": c["function"]["name"],
                                "arguments": c["function"].get("arguments", "")} for c in calls],
                "finish_reason": str(choice.get("finish_reason") or "")[:40],
                "input_tokens": _count(usage.get("prompt_tokens")),
                "output_tokens": _count(usage.get("completion_tokens"))}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ReplayFailed(f"The endpoint's answer is not a chat completion "
                           f"({type(exc).__name__}: {exc}).") from exc


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
