"""What people write on the dashboard is stored redacted (the storage boundary,
contextstore/fields.py): comments, scores, replay edits and the answers they bring back, dataset
names. Each checked by reading every row of every table (tests/redaction_corpus.rows_holding)."""

from contextstore.models import CallReplay, Comment, Dataset, Score, StoredText
from contextstore.services.events import event_append
from contextstore.services.replays import replay_run
from tests.fake_chat import fake_chat
from tests.redaction_corpus import rows_holding
from tests.views.conftest import HTMX

OPENAI = "sk-proj-" + "Zx9_Qw8-Er7Ty6Ui5" * 3
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN" * 3
AWS = "AKIA" + "Z7Q4RM2K9XW3PL5N"
CALL = [{"type": "Message", "role": "user", "content": "hi"},
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "List the tests."}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "Two tests.",
         "data": {"model": "gpt-4o"}}]


def nowhere(*secrets: str) -> None:
    for secret in secrets:
        assert rows_holding(secret) == [], secret


def test_comments_and_scores_from_the_session_page_are_stored_redacted(editor_client, session, thread,
                                                                      actor):
    event_append(thread=thread, actor=actor, events=CALL)
    url = f"/sessions/{session.pk}/"
    assert editor_client.post(f"{url}comments/", {"text": f"leaked {OPENAI}"}, **HTMX).status_code == 200
    assert editor_client.post(f"{url}scores/", {"name": "tone", "data_type": "categorical",
                                                "value": AWS, "comment": f"see {GITHUB}"},
                              **HTMX).status_code == 200
    nowhere(OPENAI, GITHUB, AWS)
    assert Comment.objects.get().text == "leaked [REDACTED:openai_key]"
    score = Score.objects.get()
    assert (score.string_value, score.comment) == ("[REDACTED:aws_access_key_id]",
                                                   "see [REDACTED:github_token]")
    page = editor_client.get(url).content.decode()
    assert "leaked [REDACTED:openai_key]" in page and OPENAI not in page


def test_a_replays_edits_and_answer_are_stored_redacted(editor_client, thread, actor, settings):
    event_append(thread=thread, actor=actor, events=CALL)
    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        response = editor_client.post(f"/threads/{thread.pk}/calls/2/replay/",
                                      {"model": "gpt-4o-mini", "text-1": f"Use {OPENAI} for it."})
        assert response.status_code == 302, response.content
        replay_run(replay_id=CallReplay.objects.get().pk)  # the worker's part
        # the worker sends the request as it is kept: the secret never leaves as typed
        assert server.requests[0]["body"]["messages"][1]["content"] == "Use [REDACTED:openai_key] for it."
    nowhere(OPENAI)
    replay = CallReplay.objects.get()
    assert "[REDACTED:openai_key]" in replay.answer
    assert "[REDACTED:openai_key]" in StoredText.objects.get(sha256=replay.request_hash).text


def test_a_dataset_named_with_a_secret_is_stored_redacted(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=CALL)
    response = editor_client.post(f"/threads/{thread.pk}/calls/2/dataset/", {"dataset": f"evals {GITHUB}"})
    assert response.status_code == 302, response.content
    nowhere(GITHUB)
    assert Dataset.objects.get().name == "evals [REDACTED:github_token]"
