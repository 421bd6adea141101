"""What a call's usage counts as tokens in and out, whatever the provider's convention."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.template import Context, Template

from contextstore.usage import cost_text, event_usage


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
