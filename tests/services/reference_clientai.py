"""clientai's AgentContext, copied from its documented source (clientai/agent/core/context.py),
used as the reference our services must agree with."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class AgentContext:
    memory: list[dict[str, str]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    last_results: dict[str, Any] = field(default_factory=dict)
    current_input: Any = None
    original_input: Any = None
    conversation_history: list[dict[str, Any]] = field(default_factory=list)
    max_history_size: int = 10
    iteration: int = 0

    def set_input(self, input_data: Any) -> None:
        if self.current_input is not None and self.last_results:
            interaction = {
                "input": self.original_input,
                "results": self.last_results.copy(),
                "iteration": self.iteration,
                "timestamp": datetime.now().isoformat(),
            }
            self.conversation_history.append(interaction)
            if len(self.conversation_history) > self.max_history_size:
                self.conversation_history = self.conversation_history[-self.max_history_size:]
        self.current_input = input_data
        self.original_input = input_data
        self.last_results.clear()

    def clear(self) -> None:
        self.memory.clear()
        self.state.clear()
        self.last_results.clear()
        self.current_input = None
        self.original_input = None
        self.iteration = 0

    def clear_all(self) -> None:
        self.clear()
        self.conversation_history.clear()

    def get_step_result(self, step_name: str) -> Any:
        return self.last_results.get(step_name)

    def set_step_result(self, step_name: str, result: Any) -> None:
        self.last_results[step_name] = result

    def set_max_history_size(self, size: int) -> None:
        if size < 0:
            raise ValueError("History size must be non-negative")
        self.max_history_size = size
        if len(self.conversation_history) > size:
            self.conversation_history = self.conversation_history[-size:]

    def get_recent_history(self, n: int | None = None, raw: bool = False):
        history = (
            self.conversation_history[-n:]
            if n and n < len(self.conversation_history)
            else self.conversation_history
        )
        if raw:
            return history
        if not history:
            if self.original_input is not None:
                return "No previous interactions. This is the first query."
            return "No interactions available."
        formatted_history = []
        for i, interaction in enumerate(history, 1):
            timestamp = datetime.fromisoformat(interaction["timestamp"]).strftime("%Y-%m-%d %H:%M:%S")
            formatted_interaction = (
                f"Interaction {i}:\n"
                f"Time: {timestamp}\n"
                f"Input: {interaction['input']}\n"
                f"Results:"
            )
            for step_name, result in interaction["results"].items():
                formatted_interaction += f"\n- {step_name}: {result}"
            formatted_history.append(formatted_interaction)
        history_text = "Previous Interactions:\n" + "\n\n".join(formatted_history)
        if self.original_input is not None:
            history_text += "\n\nNow handling the current query."
        return history_text

    def increment_iteration(self) -> int:
        self.iteration += 1
        return self.iteration
