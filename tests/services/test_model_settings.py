import pytest

from contextstore.errors import InvalidInput
from contextstore.llm_models import known_window, thread_model_settings
from contextstore.models import AuditLog, Job
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.model_settings import model_settings_update
from contextstore.services.summaries import summarization_check, summarizer_configure
from tests.conftest import messages


def test_known_models_fill_in_their_window_by_longest_prefix():
    assert known_window("gpt-4o") == 128_000
    assert known_window("gpt-4o-mini-2024-07-18") == 128_000
    assert known_window("gpt-4") == 8_192 and known_window("gpt-4-0613") == 8_192
    assert known_window("my-local-model") is None


def test_an_unknown_model_without_a_window_keeps_the_old_default(thread, settings):
    assert thread_model_settings(thread).budget == settings.CONTEXTSTORE["DEFAULT_RENDER_MAX_TOKENS"]
    model_settings_update(target=thread, model="my-local-model", actor=Actor.system())
    thread.refresh_from_db()
    effective = thread_model_settings(thread)
    default = settings.CONTEXTSTORE["DEFAULT_RENDER_MAX_TOKENS"]
    assert (effective.budget, effective.source) == (default, "default")


def test_thread_settings_inherit_from_session_then_workspace(thread, session, workspace, actor):
    model_settings_update(target=workspace, model="gpt-4o", reserve_output=8000, actor=actor)
    thread.refresh_from_db()
    assert thread_model_settings(thread).budget == 128_000 - 8000
    model_settings_update(target=session, context_window=32_000, actor=actor)
    thread.refresh_from_db()
    got = thread_model_settings(thread)
    assert (got.model, got.context_window, got.reserve_output, got.budget, got.source) == \
        ("gpt-4o", 32_000, 8000, 24_000, "session")
    model_settings_update(target=thread, model="claude-sonnet-4-20250514", context_window=None,
                          reserve_output=1000, actor=actor)
    thread.refresh_from_db()
    assert thread_model_settings(thread).budget == 32_000 - 1000  # the session's window still wins
    assert AuditLog.objects.filter(action="model_settings.update").count() == 3


def test_a_reserve_not_below_the_window_sent_with_it_is_refused_and_changes_nothing(thread, actor):
    with pytest.raises(InvalidInput):
        model_settings_update(target=thread, actor=actor, context_window=1000, reserve_output=1000)
    thread.refresh_from_db()
    assert (thread.model, thread.context_window, thread.reserve_output) == ("", None, None)


def test_the_token_budget_summarizer_uses_the_model_budget_when_no_max_is_set(thread, actor):
    summarizer_configure(thread=thread, config={"token_budget": {"preserve_recent": 2}}, actor=actor)
    model_settings_update(target=thread, model="tiny", context_window=2000, reserve_output=500,
                          actor=actor)
    event_append(thread=thread, events=messages(10, words=100), actor=actor)
    thread.refresh_from_db()
    assert summarization_check(thread=thread) is None  # 1000 tokens fit 2000 - 500
    event_append(thread=thread, events=messages(10, words=100), actor=actor)
    thread.refresh_from_db()
    assert thread.active_tokens > 1500
    assert summarization_check(thread=thread) is not None
    assert Job.objects.filter(thread=thread, kind="token_budget").exists()

