"""What a call's usage counts as tokens in and out, whatever the provider's convention."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.template import Context, Template

from contextstore.usage import Usage, cost_text, event_usage, read_usage


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


@pytest.mark.parametrize("cost,shown", [
    (0, "$0.00"),
    (None, "—"),  # unknown is not free
    (1e-9, "<$0.000001"),
    (0.000001, "$0.000001"),
    (0.00042, "$0.00042"),  # a cheap call: "$0.0000" hid it
    (Decimal("0.000420"), "$0.00042"),
    (0.004, "$0.004"),
    (0.00424, "$0.0042"),
    (0.00999, "$0.01"),  # two digits that round up to a cent show as the cent
    (0.01, "$0.01"),
    (12.5, "$12.50"),
    (1234567.891, "$1,234,567.89"),
    (1e300, "$1e+300"),
    (float("nan"), "—"),
    (-0.5, "-$0.50"),
])
def test_a_cost_is_shown_meaningfully_at_every_size(cost, shown):
    assert cost_text(cost) == shown


def test_the_money_filter_and_the_trends_table_show_costs_alike():
    from contextstore.views.trends import METRICS

    page = Template("{% load contextstore %}{{ c|money }}").render(Context({"c": Decimal("0.000042")}))
    assert page == "$0.000042"
    (_, _, _, tick, cell), = [m for m in METRICS if m[0] == "cost"]
    assert tick(0.000042) == cell(0.000042) == page


# ------------------------------------------------------------------ every provider's shape

def _openai_chat() -> dict:
    from openai.types import CompletionUsage
    from openai.types.completion_usage import CompletionTokensDetails, PromptTokensDetails
    return CompletionUsage(prompt_tokens=2000, completion_tokens=300, total_tokens=2300,
                           prompt_tokens_details=PromptTokensDetails(cached_tokens=1536),
                           completion_tokens_details=CompletionTokensDetails(reasoning_tokens=128)).model_dump()


def _openai_responses() -> dict:
    from openai.types.responses import ResponseUsage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
    return ResponseUsage(input_tokens=2000, output_tokens=300, total_tokens=2300,
                         input_tokens_details=InputTokensDetails(cached_tokens=1536, cache_write_tokens=256),
                         output_tokens_details=OutputTokensDetails(reasoning_tokens=128)).model_dump()


def _anthropic() -> dict:
    from anthropic.types import Usage as AnthropicUsage
    return AnthropicUsage(input_tokens=12, output_tokens=164, cache_read_input_tokens=1000,
                          cache_creation_input_tokens=733).model_dump()


# google-genai's GenerateContentResponseUsageMetadata: the REST API's camelCase, and the
# Python SDK's model_dump() in snake_case (its details are lists, read as nothing)
GEMINI_REST = {"promptTokenCount": 2000, "candidatesTokenCount": 172, "cachedContentTokenCount": 1536,
               "thoughtsTokenCount": 128, "totalTokenCount": 2300,
               "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 2000}]}
GEMINI_SDK = {"cache_tokens_details": None, "cached_content_token_count": 1536, "candidates_token_count": 172,
              "candidates_tokens_details": None, "prompt_token_count": 2000,
              "prompt_tokens_details": [{"modality": "TEXT", "token_count": 2000}],
              "thoughts_token_count": 128,
              "tool_use_prompt_token_count": None, "tool_use_prompt_tokens_details": None,
              "total_token_count": 2300, "traffic_type": None}


@pytest.mark.parametrize("data,expected", [
    ({"model": "gpt-4o", "usage": _openai_chat()}, Usage(2000, 300, 1536, 0, 128, True)),
    ({"model": "o3", "usage": _openai_responses()}, Usage(2000, 300, 1536, 256, 128, True)),
    ({"model": "claude-sonnet-4", "usage": _anthropic()}, Usage(1745, 164, 1000, 733, 0, True)),
    ({"model": "gemini-2.5-pro", "usageMetadata": GEMINI_REST}, Usage(2000, 300, 1536, 0, 0, True)),
    ({"model": "gemini-2.5-pro", "usage_metadata": GEMINI_SDK}, Usage(2000, 300, 1536, 0, 0, True)),
    # OpenTelemetry GenAI's attributes, current and older names; and what the span mapping stores
    ({"gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_read.input_tokens": 800}, Usage(900, 30, 800, 0, 0, True)),
    ({"gen_ai.usage.prompt_tokens": 900, "gen_ai.usage.completion_tokens": 30}, Usage(900, 30)),
    ({"input_tokens": 900, "output_tokens": 30, "cache_read_tokens": 800, "reasoning_tokens": 9},
     Usage(900, 30, 800, 0, 9, True)),
    # the provider's object flattened into the call's data
    ({**_openai_chat(), "cost": 0.1}, Usage(2000, 300, 1536, 0, 128, True)),
    ({"usage": {"prompt_tokens": 10, "completion_tokens": -3}}, Usage(10, 0)),  # a negative count is not one
])
def test_every_providers_usage_reads_into_one_record(data, expected):
    assert read_usage(data) == expected


def test_usage_without_a_token_count_is_none():
    assert read_usage({"model": "gpt-4o", "cost": 0.2}) is None and read_usage("usage") is None


def test_an_openai_usage_object_on_a_call_counts_its_output():
    """It was read as 0 output tokens on call cards, runs and replays."""
    assert event_usage(complete(usage={"prompt_tokens": 1200, "completion_tokens": 85})) == (1200, 85)


def test_anthropic_usage_without_cache_numbers_reports_no_cache():
    from anthropic.types import Usage as AnthropicUsage
    usage = read_usage({"usage": AnthropicUsage(input_tokens=40, output_tokens=7).model_dump()})
    assert usage == Usage(40, 7) and not usage.reports_cache
