"""A framework session's page shows the app- and user-scoped state beside the thread's state."""

from contextstore.selectors.agent_sessions import Identity
from contextstore.services.agent_sessions import CommitIn, session_commit, session_create

WHO = Identity(app="shop", user_id="ann", key="s1")


def test_the_thread_page_shows_the_shared_scopes_escaped(editor_client, workspace, actor):
    read = session_create(workspace=workspace, identity=WHO, actor=actor, state={"step": 1},
                          app_state={"banner": "<script>x</script>"}, user_state={"lang": "fi"})
    session_commit(workspace=workspace, identity=WHO, actor=actor,
                   commit=CommitIn(events=[{"type": "Message", "content": "hi"}], user_state={"seen": True}))
    html = editor_client.get(f"/threads/{read.thread.pk}/").content.decode()
    panel = html[html.index('id="scoped-state"'):]
    assert "App scope" in panel and "revision 1" in panel and "revision 2" in panel
    assert "&lt;script&gt;x&lt;/script&gt;" in panel and "<script>x</script>" not in html
    assert "lang" in panel and "seen" in panel


def test_plain_sessions_have_no_shared_state_panel(editor_client, thread):
    assert 'id="scoped-state"' not in editor_client.get(f"/threads/{thread.pk}/").content.decode()


def test_admins_see_scoped_states_and_session_apps_read_only(admin_client, workspace, actor):
    session_create(workspace=workspace, identity=WHO, actor=actor, app_state={"a": 1})
    listing = admin_client.get("/admin/contextstore/scopedstate/").content.decode()
    assert "shop:app" in listing
    assert "shop" in admin_client.get("/admin/contextstore/session/").content.decode()
    assert admin_client.get("/admin/contextstore/scopedstate/add/").status_code == 403
