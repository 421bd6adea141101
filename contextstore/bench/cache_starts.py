"""How much of a render's input a provider's prompt cache could serve, sessions replayed call by
call (manage.py bench_cache_starts).

Sessions are generated (seeded, so every run gives the same ones) in the two shapes agents log:
OpenAI's (tool results with role `tool`) and Anthropic's (tool results kept as `user`, thinking
on the model's messages), with varied turn sizes, tool calls with one or more results, asides
between them and now and then a turn larger than the budget. Each is replayed as an agent would:
events appended one by one and, before every model call (after a user message and after each
round of tool results), the history planned by rendering.plan_history, the walk a render runs,
over the rows the database would give it. A provider serves from its cache the longest prefix a
prompt shares with the one before; the figure is those tokens over all input tokens, the fixed
prefix (system prompt and blocks) included, for each start_chunk (0: the start slides turn by
turn, as before stable starts).
"""

import random
from dataclasses import dataclass

from contextstore.selectors.rendering import plan_history

SYSTEM_TOKENS = 400  # prefix blocks: the same in every call, so cached after the first


@dataclass
class Session:
    shape: str  # "openai" | "anthropic"
    budget: int  # the history's budget
    # (type, role, tokens, thinking tokens, a model call comes after it)
    events: list[tuple[str, str, int, int, bool]]


def sessions(count: int = 120, seed: int = 7) -> list[Session]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        shape = "openai" if i % 2 == 0 else "anthropic"
        budget = rng.choice([1500, 2000, 3000, 4000, 8000])
        tool_role = "tool" if shape == "openai" else "user"
        events: list[tuple[str, str, int, int, bool]] = []
        for _ in range(rng.randint(20, 90)):
            big = rng.random() < 0.04  # a pasted file or a huge tool output
            user = rng.randint(budget + 1, budget * 2) if big and rng.random() < 0.5 else rng.randint(10, 300)
            events.append(("Message", "user", user, 0, True))
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):  # rounds of tool calls
                calls = rng.choice([1, 1, 2])
                think = rng.randint(0, 120) if shape == "anthropic" else 0
                events.append(("LLMOutput", "assistant", rng.randint(10, 60) + think, think, False))
                for _ in range(calls):
                    events.append(("ToolCall", "assistant", rng.randint(15, 60), 0, False))
                for c in range(calls):
                    huge = big and rng.random() < 0.5
                    size = rng.randint(budget, budget * 2) if huge else rng.randint(20, 600)
                    if rng.random() < 0.05:
                        events.append(("Error", "", rng.randint(10, 40), 0, False))  # an aside
                    events.append(("ToolResult", tool_role, size, 0, c == calls - 1))
            think = rng.randint(0, 200) if shape == "anthropic" else 0
            events.append(("LLMOutput", "assistant", rng.randint(20, 400) + think, think, False))
        out.append(Session(shape, budget, events))
    return out


@dataclass
class Replay:
    calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    history_tokens: int = 0
    history_budget: int = 0
    backward: int = 0  # renders whose first event is older than the one before's

    def add(self, other: "Replay") -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / max(self.input_tokens, 1)

    @property
    def fill(self) -> float:
        return self.history_tokens / max(self.history_budget, 1)


def replay(session: Session, start_chunk: float) -> Replay:
    """Append the session's events one by one and plan a render before every model call."""
    rows: list[tuple] = []  # newest first, as the walk reads them
    total, result = 0, Replay()
    before: list[tuple[int, int]] = []  # the previous render's history: (id, tokens), oldest first
    for position, (type_, role, tokens, think, call_after) in enumerate(session.events, start=1):
        rows.insert(0, (position, position, tokens, think, type_, role, position))
        total += tokens
        if not call_after:
            continue
        plan = plan_history(budget=session.budget, strip_thinking=False, newest=rows,
                            start_chunk=start_chunk, total=total, upto_seq=position)
        shown = sorted((r.pk, r.cost) for unit in plan.units for r in unit)
        cached = SYSTEM_TOKENS if result.calls else 0
        for a, b in zip(before, shown, strict=False):
            if a != b:
                break
            cached += b[1]
        if before and shown and shown[0][0] < before[0][0]:
            result.backward += 1
        history = sum(t for _, t in shown)
        result.calls += 1
        result.input_tokens += SYSTEM_TOKENS + history
        result.cached_tokens += cached
        result.history_tokens += history
        result.history_budget += session.budget
        before = shown
    return result


def measure(chunks: list[float], count: int = 120, seed: int = 7) -> dict[float, Replay]:
    generated = sessions(count, seed)
    results = {}
    for chunk in chunks:
        total = Replay()
        for session in generated:
            total.add(replay(session, chunk))
        results[chunk] = total
    return results
