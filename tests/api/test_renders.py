def _seed(api_client, thread_url):
    api_client.put(f"{thread_url}blocks/persona/", {"value": "Be brief.", "placement": "prefix"},
                   format="json")
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": f"turn {i}"} for i in range(6)]}, format="json")


def test_a_recorded_render_is_rebuilt_after_a_collapse_and_block_edit(api_client, thread_url):
    _seed(api_client, thread_url)
    sent = api_client.get(f"{thread_url}context/?record=true&format=openai").json()
    render_id = sent["render_id"]
    api_client.post(f"{thread_url}collapse/", {"start_position": 1, "end_position": 3, "summary_text": "s"},
                    format="json")
    api_client.put(f"{thread_url}blocks/persona/", {"value": "Be long."}, format="json")
    rebuilt = api_client.get(f"/api/v1/renders/{render_id}/")
    assert rebuilt.status_code == 200
    assert rebuilt.content.decode().count("Be brief.") == 1
    body = rebuilt.json()
    assert body["messages"] == sent["messages"] and body["format"] == "openai"
    assert body["total_tokens"] == sent["stats"]["total_tokens"]

    later = api_client.get(f"{thread_url}context/?record=true&format=openai").json()["render_id"]
    diff = api_client.get(f"/api/v1/renders/{render_id}/diff/{later}/").json()
    assert diff["events_removed"]["by_reason"]["collapsed"] == {"count": 3, "ranges": [[1, 3]]}
    assert diff["prompt_cache_lost"] is True
    assert diff["blocks_changed"][0]["name"] == "persona"


def test_renders_are_not_recorded_unless_asked_and_need_write_scope(api_client, read_client, thread_url):
    from contextstore.models import RenderRecord

    _seed(api_client, thread_url)
    assert "render_id" not in api_client.get(f"{thread_url}context/").json()
    assert read_client.get(f"{thread_url}context/?record=true").status_code == 403
    assert RenderRecord.objects.count() == 0


def test_other_workspaces_cannot_read_or_diff_a_render(api_client, other_client, thread_url):
    _seed(api_client, thread_url)
    render_id = api_client.get(f"{thread_url}context/?record=true").json()["render_id"]
    assert other_client.get(f"/api/v1/renders/{render_id}/").status_code == 404
    assert other_client.get(f"/api/v1/renders/{render_id}/diff/{render_id}/").status_code == 404
    assert api_client.get("/api/v1/renders/00000000-0000-0000-0000-000000000000/").status_code == 404


def test_an_llm_call_carries_the_render_it_sent(api_client, thread_url):
    _seed(api_client, thread_url)
    render_id = api_client.get(f"{thread_url}context/?record=true").json()["render_id"]
    ok = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "render_id": render_id}}]}, format="json")
    assert ok.status_code in (200, 201)
    sent = api_client.get(f"{thread_url}llm-calls/7/").json()
    assert sent["render_id"] == render_id and sent["messages"][0]["content"] == "## persona\nBe brief."
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"messages": [{"role": "user", "content": "own"}]}}]},
        format="json")
    assert api_client.get(f"{thread_url}llm-calls/8/").json()["messages"] == [
        {"role": "user", "content": "own"}]
    assert api_client.get(f"{thread_url}llm-calls/1/").status_code == 404  # a Message
    bad = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMComplete", "data": {"render_id": "00000000-0000-0000-0000-000000000000"}}]},
        format="json")
    assert bad.status_code == 400 and "render_id" in bad.json()["error"]["message"]


def test_a_render_diff_says_the_cache_is_lost_when_an_anthropic_suffix_block_changed(api_client, thread_url):
    """The prefix blocks are the same, but format=anthropic sends suffix blocks in `system`,
    before every message: nothing after them is reusable (issue 31's first contradiction)."""
    _seed(api_client, thread_url)
    api_client.put(f"{thread_url}blocks/clock/", {"value": "Now: 10:00", "placement": "suffix"},
                   format="json")
    a = api_client.get(f"{thread_url}context/?record=true&format=anthropic").json()["render_id"]
    api_client.put(f"{thread_url}blocks/clock/", {"value": "Now: 10:05"}, format="json")
    b = api_client.get(f"{thread_url}context/?record=true&format=anthropic").json()["render_id"]
    diff = api_client.get(f"/api/v1/renders/{a}/diff/{b}/").json()
    assert diff["prefix_changed"] is False and diff["prompt_cache_lost"] is True
    cache = diff["prompt_cache"]
    assert cache["cause"] == "timestamp" and cache["divergence"]["label"] == "system block 2 (suffix blocks)"
    assert cache["reusable"] < cache["total"] and cache["provider"] == "anthropic"
    again = api_client.get(f"{thread_url}context/?record=true&format=anthropic").json()["render_id"]
    same = api_client.get(f"/api/v1/renders/{b}/diff/{again}/").json()
    assert same["prompt_cache_lost"] is False and same["prompt_cache"]["cause"] == "append"
