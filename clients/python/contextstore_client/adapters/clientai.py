"""clientai: an ``AgentContext`` that lives in a contextstore thread.

    from contextstore_client.adapters.clientai import persist

    agent = MyAgent(client=llm, default_model="gpt-4o")
    persist(agent, ContextStore(url, token).thread("chat-42", user_id="ann", agent="helper"))
    agent.run("What is Python?")      # history, results, state are on the server

Every ``AgentContext`` method calls the matching contextstore endpoint, which applies clientai's
own semantics on the server (history capped at ``max_history_size``, ``clear`` keeps history,
``clear_all`` does not), and the local fields are then taken from the server's answer, so a new
process that loads the thread sees exactly the same context. clientai's workflow also writes
``state`` and ``last_results`` directly; ``save()`` sends such writes, and runs before every method
and after every ``agent.run``.

History entries are stamped with the agent's local time (sent with its offset), so the "Time:"
line of every prompt is what clientai itself would show. A step result the workflow removes
from ``last_results`` is removed on the server too (it does not come back in history), and step
names are any string, as in clientai.

``log_llm_calls(agent, thread)`` logs every model call the agent makes (LLMCallStart with the
exact messages clientai's provider sends for the prompt, and LLMComplete), so the dashboard and
``GET /threads/{id}/llm-calls/{seq}/`` show what the model was given. clientai builds each prompt
itself from its own context, never from a contextstore render, so the calls carry messages, not
a render_id.

Not persisted: ``current_input`` when the workflow overwrites it with a step's output in the
middle of a run (the server keeps the run's input; the next ``set_input`` replaces both anyway).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from clientai.agent.core.context import AgentContext

from contextstore_client import State, ThreadHandle

FIELDS = tuple(f.name for f in fields(AgentContext))
KEY = "clientai"


def _local(timestamp: str) -> str:
    """A stored time as clientai keeps it: this process's local time, without an offset."""
    try:  # Python 3.10's fromisoformat does not read a "Z" suffix
        moment = datetime.fromisoformat(timestamp[:-1] + "+00:00" if timestamp.endswith("Z") else timestamp)
    except (AttributeError, TypeError, ValueError):
        return timestamp
    return (moment.astimezone() if moment.tzinfo else moment).replace(tzinfo=None).isoformat()


@dataclass
class ContextStoreAgentContext(AgentContext):
    """An AgentContext whose every change is written to `thread` (see the module docstring)."""

    thread: ThreadHandle | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._synced: dict[str, Any] = {}
        self._remember()

    @classmethod
    def load(cls, thread: ThreadHandle) -> ContextStoreAgentContext:
        """The context as the server has it."""
        context = cls(thread=thread)
        context._adopt(thread.state(), history=True)
        return context

    # -- keeping the local copy equal to the server

    def _remember(self) -> None:
        self._synced = {"state": copy.deepcopy(self.state), "memory": copy.deepcopy(self.memory),
                        "last_results": copy.deepcopy(self.last_results)}

    def _adopt(self, state: State, *, history: bool = False) -> None:
        self.state, self.memory = state.state, state.memory
        self.last_results = state.last_results
        self.current_input, self.original_input = state.current_input, state.original_input
        self.iteration, self.max_history_size = state.iteration, state.max_history_size
        if history:
            self.conversation_history = [
                {**entry, "timestamp": _local(entry["timestamp"])} if "timestamp" in entry
                else entry for entry in self._server.get_recent_history(raw=True)]
        self._remember()

    @property
    def _server(self) -> ThreadHandle:
        if self.thread is None:
            raise RuntimeError("ContextStoreAgentContext needs a thread: use .load(thread).")
        return self.thread

    def save(self) -> None:
        """Send what the workflow wrote directly into `state`, `memory` and `last_results`
        (results it removed too), in one transaction (the sync protocol)."""
        if self.thread is None:
            return
        synced = self._synced["last_results"]
        changed = {step: result for step, result in self.last_results.items()
                   if step not in synced or synced[step] != result}
        removed = [step for step in synced if step not in self.last_results]
        parts: dict[str, Any] = {}
        if self.state != self._synced["state"] or self.memory != self._synced["memory"]:
            # clientai has one writer per context and no revision of its own: last write wins
            # (the server still records the revision).
            parts.update(state=self.state, memory=self.memory)
        if changed or removed:
            parts["last_results"] = self.last_results
        if parts:
            self.thread.sync_save(KEY, items=[{"key": uuid.uuid4().hex, "event": {
                "type": "StepResult", "role": "assistant", "step": step[:200],
                "content": result if isinstance(result, str) else str(result),
                **({"data": {"step": step}} if len(step) > 200 else {}),
            }} for step, result in changed.items()], **parts)
        self._remember()

    # -- AgentContext, each through its endpoint

    def set_input(self, input_data: Any) -> None:
        self.save()  # results written directly must reach the server before they become history
        # Stamped with this process's time, as clientai's own datetime.now() would.
        now = datetime.now()
        self._adopt(self._server.set_input(
            input_data, timestamp=(now if now.tzinfo else now.astimezone()).isoformat()),
            history=True)

    def set_step_result(self, step_name: str, result: Any) -> None:
        self.save()
        self.last_results[step_name] = self._server.set_step_result(step_name, result)
        self._remember()

    def increment_iteration(self) -> int:
        self.save()
        self.iteration = self._server.increment_iteration()
        return self.iteration

    def set_max_history_size(self, size: int) -> None:
        if size < 0:  # clientai's own check and message, before anything is sent
            raise ValueError("History size must be non-negative")
        self.save()
        self._adopt(self._server.set_max_history_size(size), history=True)

    def clear(self) -> None:
        if self.thread is None:  # clientai's Agent constructor may call it before a thread is set
            super().clear()
            return
        self._adopt(self._server.reset())

    def clear_all(self) -> None:
        self._adopt(self._server.reset_all(), history=True)


class _LoggedClient:
    """clientai's client, logging each generate_text call to the thread."""

    def __init__(self, client: Any, thread: ThreadHandle) -> None:
        self._client, self._thread = client, thread

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def generate_text(self, prompt: str, model: str, **kwargs: Any) -> Any:
        result = self._client.generate_text(prompt, model=model, **kwargs)
        # What clientai's providers send for one prompt: the system prompt, then the prompt.
        system = kwargs.get("system_prompt")
        sent = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": prompt if isinstance(prompt, str) else str(prompt)}]
        self._thread.log_llm_call(model or "", messages=sent)
        return result


def log_llm_calls(agent: Any, thread: ThreadHandle) -> None:
    """Log every model call of a clientai `agent` to `thread` (its steps and tool selection)."""
    engine = agent.execution_engine
    if not isinstance(engine._client, _LoggedClient):
        engine._client = _LoggedClient(engine._client, thread)


def persist(agent: Any, thread: ThreadHandle) -> ContextStoreAgentContext:
    """Give a clientai `agent` the thread's context and save it after every run."""
    context = ContextStoreAgentContext.load(thread)
    agent.context = context
    run = agent.run

    def run_and_save(*args: Any, **kwargs: Any) -> Any:
        try:
            return run(*args, **kwargs)
        finally:
            agent.context.save()

    agent.run = run_and_save
    return context
