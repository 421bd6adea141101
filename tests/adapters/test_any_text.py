"""A NUL character (U+0000) in what an agent holds is saved and loaded exactly through the
adapters, as the frameworks' own stores keep it: a clientai step result (a shell command's
output) and an AgentScope Msg's text."""

from agentscope.message import TextBlock, UserMsg
from clientai.agent.core.context import AgentContext
from contextstore_client.adapters.agentscope import ContextStoreStateStore
from contextstore_client.adapters.clientai import FIELDS, ContextStoreAgentContext

from tests.adapters.test_clientai import frozen_clock  # noqa: F401 - a fixture both sides stamp with

OUTPUT = "total 8\x00drwxr-xr-x ␀ ␛ \x00\x00end"


def test_a_clientai_step_result_holding_nul_is_saved_and_loaded_exactly(store, frozen_clock):  # noqa: F811
    plain = AgentContext()
    persistent = ContextStoreAgentContext.load(store.thread("nul-clientai", user_id="ann"))
    for context in (plain, persistent):
        context.set_input("list\x00 the files")
        context.set_step_result("shell", OUTPUT)
        context.set_step_result("parse", {"lines": OUTPUT.split("\x00")})
        context.set_input("next")
    persistent.save()

    loaded = ContextStoreAgentContext.load(store.thread("nul-clientai", user_id="ann"))
    assert {f: getattr(loaded, f) for f in FIELDS} == {f: getattr(plain, f) for f in FIELDS}
    assert loaded.conversation_history[0]["results"]["shell"] == OUTPUT
    assert loaded.get_recent_history() == plain.get_recent_history()


def test_an_agentscope_msg_holding_nul_is_saved_and_loaded_exactly(store):
    states = ContextStoreStateStore(store)
    state = states.load("ann", "nul-agentscope")
    state.context.append(UserMsg("ann", OUTPUT))
    state.context.append(UserMsg("ann", [TextBlock(type="text", text="a\x00b"),
                                         TextBlock(type="text", text="\x00")]))
    state.middle_context["raw"] = OUTPUT
    states.save(state, "ann", "nul-agentscope")

    loaded = ContextStoreStateStore(store).load("ann", "nul-agentscope")
    assert [m.model_dump() for m in loaded.context] == [m.model_dump() for m in state.context]
    assert loaded.context[0].get_text_content() == OUTPUT
    assert loaded.middle_context["raw"] == OUTPUT
