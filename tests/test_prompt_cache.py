"""The prompt-cache arithmetic, pure: token-counted common prefix of two requests, word diffs,
what counts as a clock in a system prompt, the provider table, reported cache usage."""

import random
import time
from types import SimpleNamespace

from contextstore.prompt_cache import (
    PROVIDERS,
    Reported,
    Segment,
    canonical,
    disagreement,
    min_prefix,
    provider_of,
    reuse,
    timestamp_like,
    word_diff,
)
from contextstore.tokens import count_tokens
from contextstore.usage import event_cache_usage


def seg(text: str, section: str = "history") -> Segment:
    return Segment("messages", section, section, canonical({"content": text}), text)


def test_reuse_counts_whole_shared_segments_then_the_tokens_the_first_difference_starts_with():
    shared = seg("You are a careful assistant. " * 50, "system")
    a = [shared, seg("alpha beta gamma delta"), seg("tail")]
    b = [shared, seg("alpha beta gamma epsilon"), seg("tail"), seg("more")]
    r = reuse(a, b)
    assert r.index == 1 and r.before is a[1] and r.after is b[1] and not r.appended
    head = count_tokens(canonical({"content": "alpha beta gamma"}).removesuffix('"}'))
    assert shared.tokens + head <= r.reusable < shared.tokens + b[1].tokens
    assert r.total == sum(s.tokens for s in b) and r.before_total == sum(s.tokens for s in a)


def test_a_request_that_only_grows_reuses_all_of_the_one_before():
    a = [seg("one"), seg("two")]
    r = reuse(a, [*a, seg("three")])
    assert r.appended and r.reusable == sum(s.tokens for s in a) and r.index == 2


def test_a_request_that_starts_differently_reuses_nothing():
    r = reuse([seg("x " * 100)], [seg("y " * 100)])
    assert r.reusable < 5 and r.index == 0


def test_the_provider_table_holds_each_providers_minimum_and_model_exceptions():
    assert PROVIDERS["anthropic"].min_prefix == 1024 and PROVIDERS["openai"].min_prefix == 1024
    assert min_prefix("anthropic", "claude-3-5-haiku-20241022") == 2048
    assert min_prefix("anthropic", "claude-sonnet-4-20250514") == 1024
    assert provider_of("anthropic", "gpt-4o") == "anthropic"  # the wire format decides
    assert provider_of(None, "claude-3-7-sonnet") == "anthropic" and provider_of("raw", "gpt-4o") == "openai"


def test_word_diff_marks_only_the_changed_words_and_folds_long_unchanged_runs():
    before = " ".join(f"w{i}" for i in range(100)) + " old ending"
    after = " ".join(f"w{i}" for i in range(100)) + " new ending"
    diff = word_diff(before, after)
    assert ("del", "old") in diff and ("add", "new") in diff
    assert diff[0][0] == "gap" and "".join(t for op, t in diff if op == "same").count("w") <= 12


def test_word_diff_of_an_insert_a_delete_and_a_replace():
    assert word_diff("keep the tests green", "keep all the tests green") == [
        ("same", "keep "), ("add", "all "), ("same", "the tests green")]
    assert word_diff("keep all the tests green", "keep the tests green") == [
        ("same", "keep "), ("del", "all "), ("same", "the tests green")]
    assert word_diff("run pytest -q now", "run ruff check now") == [
        ("same", "run "), ("del", "pytest -q"), ("add", "ruff check"), ("same", " now")]
    assert word_diff("same", "same") == [("same", "same")]


def test_word_diff_splits_unicode_words_whole():
    assert word_diff("Grüße aus 東京, naïve café", "Grüße aus 大阪, naïve café") == [
        ("same", "Grüße aus "), ("del", "東京"), ("add", "大阪"), ("same", ", naïve café")]


def test_word_diff_caps_its_work_and_its_output_on_huge_texts():
    rng = random.Random(7)  # few distinct words: the matcher's worst case
    before, after = (" ".join(rng.choice("abcdefgh") for _ in range(30_000)) for _ in range(2))
    started = time.perf_counter()
    diff = word_diff(before, after)
    assert time.perf_counter() - started < 2 and ("gap", "the rest of a long change") in diff
    one_word = word_diff("x" * 1_000_000, "y" * 1_000_000)  # no space to cut at
    assert [op for op, _ in one_word] == ["del", "gap", "add", "gap"]
    assert sum(len(text) for _, text in one_word) < 5000


def test_only_a_changed_date_or_time_is_timestamp_like():
    assert timestamp_like("Now: 2026-01-05 10:00 UTC. Be brief.", "Now: 2026-01-05 10:05 UTC. Be brief.")
    assert timestamp_like("Today is Monday, 2026-01-05.", "Today is Tuesday, 2026-01-06.")
    assert not timestamp_like("Now: 2026-01-05 10:00. Be brief.", "Now: 2026-01-05 10:00. Be long.")
    assert not timestamp_like("retry 3 times", "retry 4 times")  # a number, but no date or time


def test_disagreement_names_an_expired_cache_a_missing_read_and_a_surprise_read():
    none_read = Reported(cache_read=0, cache_creation=5000, input_total=5000)
    expired = disagreement(reusable=4000, total=5000, minimum=1024, reported=none_read,
                           gap_seconds=900, ttl_seconds=300)
    assert expired and "15 min passed" in expired
    assert "breakpoint" in disagreement(reusable=4000, total=5000, minimum=1024, reported=none_read,
                                        gap_seconds=10, ttl_seconds=300)
    surprise = Reported(cache_read=3000, cache_creation=0, input_total=5000)
    assert "earlier request" in disagreement(reusable=72, total=5000, minimum=1024, reported=surprise,
                                             gap_seconds=10, ttl_seconds=300)
    agreeing = Reported(cache_read=3900, cache_creation=100, input_total=5000)
    assert disagreement(reusable=4000, total=5000, minimum=1024, reported=agreeing,
                        gap_seconds=10, ttl_seconds=300) is None


def complete(**data):
    return SimpleNamespace(type="LLMComplete", data=data)


def test_cache_usage_reads_each_providers_convention():
    # Anthropic: input_tokens leave out what was read from and written to the cache
    assert event_cache_usage(complete(input_tokens=50, cache_read_input_tokens=3000,
                                      cache_creation_input_tokens=200)) == (3000, 200, 3250)
    # OpenAI: prompt tokens include the cached ones, nested or flattened
    assert event_cache_usage(complete(prompt_tokens=4000,
                                      prompt_tokens_details={"cached_tokens": 2048})) == (2048, 0, 4000)
    nested = complete(usage={"prompt_tokens": 4000, "cached_tokens": 1024})
    assert event_cache_usage(nested) == (1024, 0, 4000)
    # OpenTelemetry GenAI names: input tokens include both
    otel = complete(input_tokens=4000, cache_read=1000, cache_creation=0)
    assert event_cache_usage(otel) == (1000, 0, 4000)
    assert event_cache_usage(complete(input_tokens=4000)) is None
    assert event_cache_usage(SimpleNamespace(type="LLMCallStart", data={"cached_tokens": 5})) is None
