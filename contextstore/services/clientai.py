"""clientai's AgentContext operations, with the semantics of clientai/agent/core/context.py.

Each changes fields of the thread's document (services/document.py) under its row lock, which
records a revision, so every one of them can be undone by restoring the revision before it.
"""

from datetime import datetime
from typing import Any

from django.db import transaction

from contextstore.models import Thread
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.document import document_write
from contextstore.services.events import event_append


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def thread_set_input(*, thread: Thread, input_data: Any, actor: Actor,
                     timestamp: str | None = None) -> Thread:
    """AgentContext.set_input: the previous interaction moves to history only if there was a
    current input and results; history is capped at max_history_size. The history entry's
    time is the agent's `timestamp` when it sent one (ISO 8601 with its offset, checked by the
    door: api.serializers.InputSerializer), so "Time:" shows the agent's local time, else this
    server's, as clientai's own datetime.now() would."""
    stamp = timestamp or datetime.now().isoformat()
    with transaction.atomic():
        thread = lock_thread(thread)
        values: dict[str, Any] = {}
        if thread.current_input is not None and thread.last_results:
            history = list(thread.conversation_history)
            history.append({
                "input": thread.original_input,
                "results": dict(thread.last_results),
                "iteration": thread.iteration,
                "timestamp": stamp,
            })
            if len(history) > thread.max_history_size:
                # Same slice as clientai, including its quirk that a size of 0 keeps everything.
                history = history[-thread.max_history_size:]
            values["conversation_history"] = history
        values.update(current_input=input_data, original_input=input_data, last_results={})
        document_write(thread=thread, actor=actor, reason="set_input", values=values)
        audit(actor=actor, action="clientai.set_input", target=thread, workspace=thread.workspace)
        event_append(thread=thread, actor=actor,
                     events=[{"type": "Input", "role": "user", "content": _text(input_data)}])
    return thread


def thread_set_step_result(*, thread: Thread, step: str, result: Any, actor: Actor) -> Thread:
    with transaction.atomic():
        thread = lock_thread(thread)
        document_write(thread=thread, actor=actor, reason=f"set_step_result {step}",
                       values={"last_results": {**thread.last_results, step: result}})
        audit(actor=actor, action="clientai.set_step_result", target=thread,
              workspace=thread.workspace, step=step)
        # The event's step column is short; a longer name is kept whole in its data.
        event_append(thread=thread, actor=actor, events=[{
            "type": "StepResult", "role": "assistant", "step": step[:200], "content": _text(result),
            **({"data": {"step": step}} if len(step) > 200 else {}),
        }])
    return thread


def thread_get_step_result(*, thread: Thread, step: str) -> Any:
    return thread.last_results.get(step)


def thread_increment_iteration(*, thread: Thread, actor: Actor) -> int:
    with transaction.atomic():
        thread = lock_thread(thread)
        document_write(thread=thread, actor=actor, reason="increment_iteration",
                       values={"iteration": thread.iteration + 1})
        audit(actor=actor, action="clientai.increment_iteration", target=thread,
              workspace=thread.workspace, iteration=thread.iteration)
    return thread.iteration


def thread_set_max_history_size(*, thread: Thread, size: int, actor: Actor) -> Thread:
    with transaction.atomic():
        thread = lock_thread(thread)
        values: dict[str, Any] = {"max_history_size": size}
        if len(thread.conversation_history) > size:
            values["conversation_history"] = thread.conversation_history[-size:]
        document_write(thread=thread, actor=actor, reason="set_max_history_size", values=values)
        audit(actor=actor, action="clientai.set_max_history_size", target=thread,
              workspace=thread.workspace, size=size)
    return thread


def _cleared() -> dict[str, Any]:
    """What AgentContext.clear() resets, in its order."""
    return {"memory": [], "state": {}, "last_results": {}, "current_input": None,
            "original_input": None, "iteration": 0}


def thread_reset(*, thread: Thread, actor: Actor) -> Thread:
    """AgentContext.clear: state, memory, results, inputs and iteration reset; history kept."""
    with transaction.atomic():
        thread = lock_thread(thread)
        document_write(thread=thread, actor=actor, reason="reset", values=_cleared())
        audit(actor=actor, action="thread.reset", target=thread, workspace=thread.workspace)
    return thread


def thread_reset_all(*, thread: Thread, actor: Actor) -> Thread:
    """AgentContext.clear_all: clear() and the conversation history too."""
    with transaction.atomic():
        thread = lock_thread(thread)
        document_write(thread=thread, actor=actor, reason="reset_all",
                       values={**_cleared(), "conversation_history": []})
        audit(actor=actor, action="thread.reset_all", target=thread, workspace=thread.workspace)
    return thread


def recent_history(*, thread: Thread, n: int | None = None, raw: bool = False) -> str | list[dict]:
    """AgentContext.get_recent_history, byte for byte."""
    history = thread.conversation_history
    history = history[-n:] if n and n < len(history) else history
    if raw:
        return history
    if not history:
        if thread.original_input is not None:
            return "No previous interactions. This is the first query."
        return "No interactions available."
    formatted = []
    for i, interaction in enumerate(history, 1):
        timestamp = datetime.fromisoformat(interaction["timestamp"]).strftime("%Y-%m-%d %H:%M:%S")
        text = f"Interaction {i}:\nTime: {timestamp}\nInput: {interaction['input']}\nResults:"
        for step_name, result in interaction["results"].items():
            text += f"\n- {step_name}: {result}"
        formatted.append(text)
    history_text = "Previous Interactions:\n" + "\n\n".join(formatted)
    if thread.original_input is not None:
        history_text += "\n\nNow handling the current query."
    return history_text
