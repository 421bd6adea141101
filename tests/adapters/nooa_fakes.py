"""An offline Nooa agent: FakeLLMClient scripted to run code through execute_python."""

from contextstore_client.adapters.demo import nooa_run_code as run_code
from nooa import Agent, DynamicContext
from nooa.unifiedllm.fake import FakeLLMClient


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
