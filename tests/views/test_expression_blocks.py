"""An expression block on the thread page shows what it renders to now and that text's tokens,
not "0 tok"; one that renders nothing says it is left out."""

from contextstore.services.blocks import block_upsert
from contextstore.services.state import state_write
from contextstore.tokens import count_tokens


def test_an_expression_block_shows_its_value_and_its_tokens(editor_client, thread, actor):
    state_write(thread=thread, actor=actor, state={"goal": "ship the <b>export</b> fix"})
    block_upsert(thread=thread, name="goal", expr="Goal: {{ state.goal }}", actor=actor)
    block_upsert(thread=thread, name="empty", expr="{{ state.missing }}", actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    goal = html[html.index('data-block="goal"'):html.index('data-block="goal"') + 3000]
    tokens = count_tokens("Goal: ship the <b>export</b> fix")
    assert f"· {tokens} tok" in goal and "· 0 tok" not in goal
    assert '<span class="block-value">Goal: ship the &lt;b&gt;export&lt;/b&gt; fix</span>' in goal
    empty = html[html.index('data-block="empty"'):]
    assert "· 0 tok" in empty[:600] and "nothing (the block is left out)" in empty[:1500]
