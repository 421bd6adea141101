"""The API's audited reads: events, context, exports, render records and LLM calls by token,
one row per (token, action, object, hour); a refused read writes none."""


from contextstore.models import ReadAudit
from tests.conftest import messages


def _rows():
    return sorted(ReadAudit.objects.values_list("action", "target_type", "actor_label"))


def _seed(api_client, thread_url):
    assert api_client.post(f"{thread_url}events/", {"events": messages(3, words=8)},
                           format="json").status_code == 201


def test_every_audited_api_read_writes_its_row_once(api_client, token, thread, thread_url):
    _seed(api_client, thread_url)
    assert not ReadAudit.objects.exists()  # writing is not reading
    label = f"token:{token[0].prefix}"
    reads = [
        (f"{thread_url}events/", ("events.read", "thread")),
        (f"{thread_url}context/", ("context.read", "thread")),
        (f"{thread_url}context/?record=true", ("context.read", "thread")),
        (f"{thread_url}export/", ("export", "thread")),
        (f"{thread_url}export/?format=peteos", ("export", "thread")),
    ]
    for url, _ in reads:
        response = api_client.get(url)
        assert response.status_code == 200, url
    assert _rows() == [("context.read", "thread", label), ("events.read", "thread", label),
                       ("export", "thread", label)]
    row = ReadAudit.objects.get(action="events.read")
    assert (row.target_id, row.session_id, row.workspace_id, row.actor_token_id) == (
        str(thread.pk), thread.session_id, thread.workspace_id, token[0].pk)

    render_id = api_client.get(f"{thread_url}context/?record=true").json()["render_id"]
    assert api_client.get(f"/api/v1/renders/{render_id}/").status_code == 200
    assert api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"model": "m", "render_id": render_id}}]},
        format="json").status_code == 201
    assert api_client.get(f"{thread_url}llm-calls/4/").status_code == 200
    render_row = ReadAudit.objects.get(action="render.read")
    assert (render_row.target_type, render_row.target_id, render_row.session_id) == (
        "renderrecord", render_id, thread.session_id)
    assert ReadAudit.objects.filter(action="call.sent", target_id=str(thread.pk)).count() == 1
    for url, _ in reads:  # again, in the same hour: nothing more
        api_client.get(url)
    assert ReadAudit.objects.count() == 5


def test_a_read_token_is_audited_as_itself(read_client, read_token, thread_url):
    assert read_client.get(f"{thread_url}context/").status_code == 200
    assert ReadAudit.objects.get().actor_token_id == read_token[0].pk


def test_refused_and_foreign_reads_write_nothing(api_client, other_client, thread, thread_url):
    _seed(api_client, thread_url)
    for url in (f"{thread_url}events/", f"{thread_url}context/", f"{thread_url}export/",
                f"{thread_url}llm-calls/1/"):
        assert other_client.get(url).status_code == 404, url
    assert api_client.get(f"{thread_url}context/?max_tokens=-1").status_code == 400
    assert api_client.get(f"{thread_url}events/?after_seq=x").status_code == 400
    assert api_client.get(f"{thread_url}llm-calls/1/").status_code == 404  # a Message
    assert not ReadAudit.objects.exists()
