"""What contextstore's render gives the model for an AgentScope agent is what AgentScope's own
formatters give it for the same memory: the real agent (a system prompt, a tool call with two
parallel results, a second turn) saved by the adapter, the thread's openai and anthropic renders
compared message by message with OpenAIChatFormatter / AnthropicChatFormatter of the agent's
context (roles, text, each call paired with its result, order). The system prompt is the
agent's: AgentScope sends it first, outside its state; the adapter keeps it as the thread's
``system_prompt`` prefix block, so the render sends it first too, the same text character for
character (a Markdown heading in it included), counted as tokens.request_tokens counts a
system text."""

import asyncio
import json

from agentscope.agent import Agent, ContextConfig
from agentscope.formatter import AnthropicChatFormatter, OpenAIChatFormatter
from agentscope.message import Msg, SystemMsg, UserMsg
from agentscope.model import StructuredResponse
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit
from contextstore_client.adapters.agentscope import ContextStoreStateStore

from contextstore.selectors.cache import segments_of
from contextstore.tokens import count_tokens, request_tokens
from tests.adapters.test_framework_tool_pairs import AgentScopeToolModel, agentscope_weather

# A prompt a block header would show in: several lines, a Markdown heading of its own.
SYSTEM = "Be brief.\n\n# Rules\n- Answer in one sentence.\n- Use °C, never °F."


class WireModel(AgentScopeToolModel):
    """The scripted tool-calling model; keeps the messages AgentScope gave it on each call."""

    def __init__(self, calls: list) -> None:
        super().__init__()
        self.calls = calls

    async def _call_api(self, model_name, messages, tools=None, tool_choice=None, **kwargs):
        self.calls.append(list(messages))
        return await super()._call_api(model_name, messages, tools=tools, tool_choice=tool_choice,
                                       **kwargs)


def run_turns(states: ContextStoreStateStore, calls: list) -> Agent:
    agent = None
    for text in ("Weather in Paris?", "And tomorrow?"):
        state = states.load("alice", "render")
        tools = Toolkit(tools=[FunctionTool(agentscope_weather, name="weather", is_read_only=True,
                                            permission=PermissionDecision(PermissionBehavior.ALLOW, "t"))])
        agent = Agent(name="helper", system_prompt=SYSTEM, model=WireModel(calls), toolkit=tools,
                      state=state)
        asyncio.run(agent.reply(UserMsg("alice", text)))
        # the prompt the agent sends (its own, with whatever skills or middlewares add)
        states.save(agent.state, "alice", "render",
                    system_prompt=asyncio.run(agent._get_system_prompt()))
    assert agent is not None
    return agent


def formatted(formatter, messages: list[Msg]) -> list:
    return asyncio.run(formatter.format(messages))


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if b.get("type") == "text" else _text(b.get("content", ""))
                     for b in content or () if b.get("type") in ("text", "tool_result"))


def _args(arguments):
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def openai_read(messages: list[dict]) -> list[tuple]:
    """What the model reads of OpenAI chat messages: role, text, calls, the call answered."""
    return [(m["role"], _text(m.get("content")),
             [(c["id"], c["function"]["name"], _args(c["function"]["arguments"]))
              for c in m.get("tool_calls") or ()], m.get("tool_call_id")) for m in messages]


def anthropic_read(messages: list[dict]) -> list[tuple]:
    """What the model reads of Anthropic messages: role, then each block's kind, id and text.
    Consecutive messages of one role are one turn (the Messages API combines them), so they
    read as one: AgentScope sends a hint after a user's text as a second user message, the
    render as a second block of the same message."""
    read: list[tuple] = []
    for m in messages:
        blocks = [(b["type"], b.get("id") or b.get("tool_use_id"),
                   _text([b]) if b["type"] != "tool_use" else _args(b["input"]))
                  for b in ([{"type": "text", "text": m["content"]}]
                            if isinstance(m["content"], str) else m["content"])]
        if read and read[-1][0] == m["role"]:
            read[-1][1].extend(blocks)
        else:
            read.append((m["role"], blocks))
    return read


def test_the_render_is_what_agentscopes_formatters_send(store):
    states = ContextStoreStateStore(store)
    calls: list = []
    agent = run_turns(states, calls)
    # What AgentScope put before the model on its last call: its system prompt, then the context.
    last = calls[-1]
    assert last[0].role == "system" and last[0].get_text_content() == SYSTEM
    context = agent.state.context
    assert [m.id for m in last[1:]] == [m.id for m in context[:len(last) - 1]]

    thread = states.thread("alice", "render")
    own_openai = formatted(OpenAIChatFormatter(), [SystemMsg("system", SYSTEM), *context])
    render = thread.context(format="openai", record=False)
    assert own_openai[0]["role"] == "system" and _text(own_openai[0]["content"]) == SYSTEM
    # AgentScope's memory holds its time reminder (a hint block): the render must send it too.
    assert any("<current-time>" in text for _, text, _, _ in openai_read(own_openai))
    # The system message first, its text exactly AgentScope's, then the conversation.
    assert render.messages[0] == {"role": "system", "content": SYSTEM}
    assert openai_read(render.messages) == openai_read(own_openai)

    own_anthropic = formatted(AnthropicChatFormatter(), [SystemMsg("system", SYSTEM), *context])
    rendered = thread.context(format="anthropic", record=False)
    # AgentScope's AnthropicChatModel sends its formatter's first (system) message's content as
    # the request's `system`.
    assert own_anthropic[0]["role"] == "system"
    assert rendered.system == own_anthropic[0]["content"]
    assert anthropic_read(rendered.messages) == anthropic_read(own_anthropic[1:])

    # One count: the system prompt is a system text of tokens.request_tokens, the same in the
    # render's stats and in the prompt-cache analysis of AgentScope's own request.
    system_tokens = request_tokens(system=[count_tokens(SYSTEM)])
    for ctx in (render, rendered):
        assert ctx.stats["sections"]["prefix"]["tokens"] == system_tokens
        history = ctx.stats["sections"]["history"]["tokens"]
        assert ctx.stats["total_tokens"] == system_tokens + history
    own = segments_of(fmt="openai", tools=[], system=[], messages=own_openai, sections=None)
    assert own[0].section == "system" and own[0].tokens == system_tokens

    # Saved again unchanged, the block keeps its version; the agent's new prompt replaces it.
    state = states.load("alice", "render")
    states.save(state, "alice", "render", system_prompt=SYSTEM)
    assert [(b.name, b.version, b.placement) for b in thread.blocks()] == [("system_prompt", 1, "prefix")]
    states.save(state, "alice", "render", system_prompt="Be terse.")
    assert thread.context(format="openai", record=False).messages[0] == {"role": "system",
                                                                         "content": "Be terse."}


class CompressingModel(WireModel):
    """WireModel that also writes AgentScope's compression summary (its structured output)."""

    async def generate_structured_output(self, messages, structured_model, **kwargs):
        fields = ("task_overview", "current_state", "important_discoveries", "next_steps",
                  "context_to_preserve")
        return StructuredResponse(content={f: f"{f} of the weather talk" for f in fields})


def test_agentscopes_compression_summary_is_where_its_formatters_send_it(store):
    states = ContextStoreStateStore(store)
    calls: list = []
    run_turns(states, calls)
    state = states.load("alice", "render")
    before = [m.id for m in state.context]
    # AgentScope's own compression: a small context size makes the two turns exceed the trigger.
    agent = Agent(name="helper", system_prompt=SYSTEM, model=CompressingModel(calls), state=state)
    agent.model.context_size = 200
    asyncio.run(agent.compress_context(ContextConfig(trigger_ratio=0.5, reserve_ratio=0.3)))
    summary = agent.state.summary
    assert summary and "task_overview of the weather talk" in str(summary)
    kept = [m.id for m in agent.state.context]
    assert kept and kept != before and kept == before[len(before) - len(kept):]
    states.save(agent.state, "alice", "render", system_prompt=SYSTEM)

    context = agent.state.context
    system = SystemMsg("system", SYSTEM)
    own_openai = formatted(OpenAIChatFormatter(), [system, UserMsg("user", summary), *context])
    thread = states.thread("alice", "render")
    render = thread.context(format="openai", record=False)
    assert openai_read(own_openai)[1][0] == "user"  # the summary, right after the system prompt
    assert openai_read(render.messages) == openai_read(own_openai)
    own_anthropic = formatted(AnthropicChatFormatter(), [system, UserMsg("user", summary), *context])
    rendered = thread.context(format="anthropic", record=False)
    assert rendered.system == own_anthropic[0]["content"]  # the system prompt alone
    assert anthropic_read(rendered.messages) == anthropic_read(own_anthropic[1:])

    # Loaded again, the state has the summary and the kept messages; an unchanged save is a no-op.
    again = states.load("alice", "render")
    assert again.summary == summary and [m.id for m in again.context] == kept
    revision = states.save(again, "alice", "render")
    assert states.save(again, "alice", "render") == revision
