"""The JSON rules shared by the API parsers and form fields (contextstore.jsonstrict)."""

import json
import time

import pytest
from django import forms
from hypothesis import given
from hypothesis import strategies as st

from contextstore.forms import parse_cursor
from contextstore.jsonstrict import JSONRefused, StrictJSONDecoder, json_depth_exceeded, strict_loads


@pytest.mark.parametrize("text, place", [
    ("[" * 65 + "]" * 65, "body"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "body"),
    ('{"a": 1, "a": 2}', "a"),
    ('{"x": [{"k": 1}, {"k": 1, "k": 2}]}', "x[1].k"),
    ('{"x": "\\ud800"}', "x"),
    ('{"x": ["ok", "\\udc00"]}', "x[1]"),
    ('{"x": NaN}', "x"),
    ('[1, Infinity]', "[1]"),
    ('{"a": {"b": -Infinity}}', "a.b"),
    ('{"big": [1e999]}', "big[0]"),
    ('{"big": -' + "9" * 400 + '.0}', "big"),
    ("NaN", "body"),
])
def test_it_refuses_with_the_place_named(text, place):
    with pytest.raises(JSONRefused) as refused:
        strict_loads(text)
    assert refused.value.place == place


def test_it_keeps_what_is_fine():
    text = ('{"deep": ' + "[" * 63 + "]" * 63 + ', "pair": "\\ud83d\\ude00", "s": "[[[[\\"{{{{", "z": 0, '
            '"nul": "a\\u0000b", "\\u0000": 1e308, "NaN": "Infinity", "tiny": 1e-999}')
    data = strict_loads(text)
    assert list(data) == ["deep", "pair", "s", "z", "nul", "\x00", "NaN", "tiny"] and data["pair"] == "😀"
    assert (data["nul"], data["\x00"], data["tiny"]) == ("a\x00b", 1e308, 0.0)
    assert strict_loads("[" * 64 + "]" * 64) is not None


def test_brackets_inside_strings_do_not_count_and_unterminated_strings_stay_linear():
    assert json_depth_exceeded('["' + "[" * 500 + '"]') is None
    started = time.monotonic()
    with pytest.raises(ValueError):
        strict_loads('"\\"' * 300_000)  # every quote escaped: one long unterminated string
    # Linear takes well under a second; a quadratic scan of 900k characters takes many minutes,
    # so this bound only catches the complexity, not a busy machine.
    assert time.monotonic() - started < 30


def test_a_large_ordinary_body_reads_as_json_loads_reads_it():
    body = json.dumps({"events": [{"type": "Message", "content": "x" * 200, "data": {"a": [1, {}]}}
                                  for _ in range(10_000)]})
    assert strict_loads(body) == json.loads(body)


def nested(depth: int, text: str, brackets_first: bool) -> str:
    """JSON `depth` containers deep (objects and lists by turn), a string with brackets inside."""
    value = json.dumps(text)
    for level in range(depth):
        value = f'{{"k": {value}, "s": "]}}"}}' if level % 2 else f'["[{{", {value}]'
    return ("[" * 3 + "]" * 3 + ", " if brackets_first else "") + value


@given(depth=st.integers(62, 66) | st.integers(0, 90), first=st.booleans(), cut=st.integers(0, 3),
       text=st.text(alphabet="[]{}\\\"ab", max_size=8))
def test_depth_is_refused_exactly_where_the_text_scan_says(depth, text, first, cut):
    """The parsed value is measured, the text scanned only on refusal: a body is refused as too
    deep exactly when the text scan finds it deeper than 64 levels, at the same character, also
    when it is not JSON at all (cut short)."""
    body = nested(depth, text, first)
    body = body[:len(body) - cut] if cut else f"[{body}]" if first else body
    offset = json_depth_exceeded(body)
    try:
        strict_loads(body)
    except JSONRefused as refused:
        assert offset is not None
        assert refused.message.endswith(f"(at character {offset}).")
    except ValueError:
        assert offset is None  # not JSON, and not too deep either
    else:
        assert offset is None


def test_form_fields_use_the_same_rules():
    field = forms.JSONField(decoder=StrictJSONDecoder)
    assert field.clean('{"a": 1}') == {"a": 1}
    for bad in ('{"a": 1, "a": 2}', "[" * 100 + "]" * 100, '"\\ud800"', "[NaN]"):
        with pytest.raises(forms.ValidationError):
            field.clean(bad)


def test_a_dashboard_cursor_with_an_impossible_date_is_ignored():
    assert parse_cursor("2024-13-01T00:00:00+00:00~5") is None
    assert parse_cursor("2024-01-01T00:00:00+00:00~٣") is None
    assert parse_cursor("2024-01-01T00:00:00+00:00~5") is not None
