"""The red style is kept for what cannot be undone: Clear context, Reset and Reset all (each
undone by un-clear or a restore) open in the plain style; deleting a fork is red."""

import re

from contextstore.services.threads import thread_fork


def test_only_what_cannot_be_undone_is_red(editor_client, thread, actor):
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    found = re.findall(r'<summary class="([^"]*)">([^<]*…)</summary>', html)
    toggles = {name: cls for cls, name in found}
    assert toggles["Clear context…"] == toggles["Reset…"] == toggles["Reset all…"] == "btn"
    fork = thread_fork(thread=thread, name="f", actor=actor)
    forked = editor_client.get(f"/threads/{fork.pk}/").content.decode()
    assert '<summary class="btn danger">Delete fork…</summary>' in forked
