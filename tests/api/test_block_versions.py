import pytest

from contextstore.blockspec import NAME_RULE, check_block
from contextstore.errors import InvalidInput
from contextstore.models import AuditLog, ContextBlock


def test_versions_are_listed_and_a_deleted_block_is_restored(api_client, thread_url):
    api_client.put(f"{thread_url}blocks/goal/", {"value": "ship"}, format="json")
    api_client.put(f"{thread_url}blocks/goal/", {"value": "ship today"}, format="json")
    assert api_client.delete(f"{thread_url}blocks/goal/").status_code == 204
    listed = api_client.get(f"{thread_url}blocks/goal/versions/").json()["results"]
    assert [(v["version"], v["value"], v["deleted"], v["reason"]) for v in listed] == [
        (3, "ship today", True, "delete"), (2, "ship today", False, "update"),
        (1, "ship", False, "create")]
    restored = api_client.post(f"{thread_url}blocks/goal/versions/1/restore/")
    assert restored.status_code == 200
    assert (restored.json()["value"], restored.json()["version"]) == ("ship", 4)
    assert api_client.get(f"{thread_url}blocks/").json()["results"][0]["value"] == "ship"
    assert AuditLog.objects.filter(action="block.restore", actor_type="token").count() == 1


def test_restoring_an_unknown_version_is_a_404(api_client, thread_url):
    api_client.put(f"{thread_url}blocks/goal/", {"value": "ship"}, format="json")
    response = api_client.post(f"{thread_url}blocks/goal/versions/7/restore/")
    assert response.status_code == 404 and response.json()["error"]["code"]


def test_other_workspaces_and_readers_cannot_restore(api_client, read_client, other_client, thread_url):
    api_client.put(f"{thread_url}blocks/goal/", {"value": "ship"}, format="json")
    api_client.put(f"{thread_url}blocks/goal/", {"value": "later"}, format="json")
    assert other_client.get(f"{thread_url}blocks/goal/versions/").status_code == 404
    assert other_client.post(f"{thread_url}blocks/goal/versions/1/restore/").status_code == 404
    assert read_client.post(f"{thread_url}blocks/goal/versions/1/restore/").status_code == 403
    assert read_client.get(f"{thread_url}blocks/goal/versions/").status_code == 200
    assert api_client.get(f"{thread_url}blocks/").json()["results"][0]["value"] == "later"


def test_a_block_name_with_a_slash_is_refused_at_creation_naming_the_rule(api_client, thread_url):
    response = api_client.put(f"{thread_url}blocks/team/plan/", {"value": "ship"}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["details"] == {"name": NAME_RULE}
    assert error["message"] == f"name 'team/plan': {NAME_RULE}."
    assert api_client.get(f"{thread_url}blocks/").json()["results"] == []


def test_reading_a_block_name_with_a_slash_says_why_there_is_none(api_client, thread_url):
    for method, path in (("get", "team/plan/versions/"), ("delete", "team/plan/"),
                         ("post", "team/plan/versions/1/restore/")):
        response = getattr(api_client, method)(f"{thread_url}blocks/{path}")
        assert response.status_code == 404, path
        assert NAME_RULE in response.json()["error"]["message"]
    # a path that holds no slash-name stays the plain unknown-endpoint answer
    plain = api_client.get(f"{thread_url}blocks/goal")
    assert plain.status_code == 404 and NAME_RULE not in plain.json()["error"]["message"]


def test_every_other_door_refuses_a_slash_name_too(thread, actor):
    # the one block definition every door checks (the dashboard, the admin and an import's
    # refusals are tested beside them)
    with pytest.raises(InvalidInput) as refused:
        check_block("a/b", {"value": "x"})
    assert refused.value.details == {"name": NAME_RULE}
    assert not ContextBlock.objects.filter(thread=thread).exists()
