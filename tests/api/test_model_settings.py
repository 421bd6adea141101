import pytest

from contextstore.models import AuditLog
from contextstore.selectors import rendering
from contextstore.services.events import event_append
from contextstore.services.model_settings import model_settings_update
from tests.conftest import messages


def test_thread_model_settings_are_read_and_patched(api_client, thread_url):
    got = api_client.get(f"{thread_url}model/").json()
    assert got["effective"]["source"] == "default" and got["model"] == ""
    patched = api_client.patch(f"{thread_url}model/", {"model": "gpt-4o", "reserve_output": 2000},
                               format="json")
    assert patched.status_code == 200
    assert patched.json()["effective"] == {"model": "gpt-4o", "context_window": 128_000,
                                           "reserve_output": 2000, "budget": 126_000, "source": "table"}
    assert AuditLog.objects.filter(action="model_settings.update", actor_type="token").exists()


def test_session_defaults_reach_its_threads(api_client, thread, thread_url):
    response = api_client.patch(f"/api/v1/sessions/{thread.session_id}/model/",
                                {"context_window": 50_000, "reserve_output": 0}, format="json")
    assert response.status_code == 200
    assert api_client.get(f"{thread_url}model/").json()["effective"]["budget"] == 50_000


def test_bad_model_settings_are_a_400_and_other_workspaces_a_404(api_client, other_client, thread_url):
    bad = api_client.patch(f"{thread_url}model/", {"context_window": 100, "reserve_output": 100},
                           format="json")
    assert bad.status_code == 400 and "reserve_output" in bad.json()["error"]["message"]
    assert other_client.get(f"{thread_url}model/").status_code == 404
    assert other_client.patch(f"{thread_url}model/", {"model": "x"}, format="json").status_code == 404


@pytest.mark.parametrize("changes", [
    {"context_window": 0}, {"context_window": "big"}, {"context_window": 100_000_001},
    {"reserve_output": -1}, {"reserve_output": True}, {"model": "m" * 201}, {"model": ["gpt"]},
])
def test_bad_settings_are_a_400_that_changes_nothing(api_client, thread, thread_url, changes):
    # The door's checks (the service trusts them): a thread's and a session's alike.
    for url in (f"{thread_url}model/", f"/api/v1/sessions/{thread.session_id}/model/"):
        response = api_client.patch(url, changes, format="json")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "invalid"
        assert sorted(response.json()["error"]["details"]) == sorted(changes)
    thread.refresh_from_db()
    thread.session.refresh_from_db()
    assert (thread.model, thread.context_window, thread.reserve_output) == ("", None, None)
    assert (thread.session.model, thread.session.context_window) == ("", None)


def test_a_reserve_not_below_the_stored_window_is_a_conflict(api_client, thread_url):
    """The request alone is sound; it conflicts with the window already set (issue 27: a
    schema-valid request is refused only as a documented conflict)."""
    assert api_client.patch(f"{thread_url}model/", {"context_window": 100},
                            format="json").status_code == 200
    refused = api_client.patch(f"{thread_url}model/", {"reserve_output": 100}, format="json")
    assert refused.status_code == 409, refused.json()
    assert refused.json()["error"]["details"] == {"reserve_output": "not below context_window"}
    assert api_client.get(f"{thread_url}model/").json()["reserve_output"] is None


def test_a_render_without_max_tokens_uses_the_thread_budget(api_client, thread, thread_url, actor):
    model_settings_update(target=thread, model="gpt-4", reserve_output=1192, actor=actor)
    event_append(thread=thread, events=messages(300, words=60), actor=actor)
    stats = api_client.get(f"{thread_url}context/").json()["stats"]
    assert stats["max_tokens"] == 7000 and stats["total_tokens"] <= 7000
    thread.refresh_from_db()
    direct = rendering.context_render(thread=thread, max_tokens=7000)["stats"]
    assert direct["total_tokens"] == stats["total_tokens"]
