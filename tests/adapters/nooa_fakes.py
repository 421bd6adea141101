"""An offline Nooa agent: FakeLLMClient scripted to run code through execute_python."""

import json

from nooa import Agent, DynamicContext
from nooa.unifiedllm.fake import FakeLLMClient
from nooa.unifiedllm.unifiedllm import LLMResponse, ToolCall


def run_code(source: str, call: int) -> LLMResponse:
    """What a model answers when it decides to run `source` in Nooa's code tool."""
    arguments = json.dumps({"code": source})
    return LLMResponse(
        raw_response=None, content="", finish_reason="tool_calls", reasoning=None,
        tool_calls=[ToolCall(id=f"call-{call}", name="execute_python", arguments=arguments)],
        assistant_message={"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call-{call}", "type": "function",
            "function": {"name": "execute_python", "arguments": arguments}}]},
        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    )


class Counter(Agent):
    """Keeps a running total."""

    count: int = 0

    async def bump(self, n: int) -> int:
        """Add n to count and return the new count."""
        ...


def counter(storage, calls: int = 3) -> Counter:
    llm = FakeLLMClient(scripted_responses=[
        run_code("self.count += n\nreturn_result(self.count)", i) for i in range(calls)])
    return Counter(llm=llm, storage=storage, context={
        "rules": "Count exactly.", "scratch": "notes nobody needs", "total": DynamicContext("self.count"),
    })
