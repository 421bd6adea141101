"""What a call's usage counts as tokens in and out, whatever the provider's convention."""

from types import SimpleNamespace

import pytest

from contextstore.usage import event_usage


def complete(**data):
    return SimpleNamespace(type="LLMComplete", data=data)


@pytest.mark.parametrize("data,expected", [
    # Anthropic: input_tokens leave out what the cache read and wrote
    ({"input_tokens": 12, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 733,
      "output_tokens": 164}, (1745, 164)),
    # OpenAI: prompt tokens already hold the cached ones
    ({"prompt_tokens": 2000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 1500}},
     (2000, 50)),
    # OpenTelemetry GenAI: input tokens hold cache_read and cache_creation
    ({"input_tokens": 900, "cache_read": 800, "output_tokens": 3}, (900, 3)),
    ({"input_tokens": 40, "output_tokens": 7}, (40, 7)),
    ({}, (0, 0)),
])
def test_tokens_in_are_every_token_the_request_held(data, expected):
    assert event_usage(complete(**data)) == expected


def test_only_a_call_end_reports_usage():
    assert event_usage(SimpleNamespace(type="LLMCallStart", data={"input_tokens": 5})) == (0, 0)
