"""services.evaluators.evaluate: each evaluator kind on one output, as the online run and
experiments call it; a judge through a local fake endpoint, a failing judge an error."""

import json

import pytest

from contextstore.evaluatorspec import evaluator_version
from contextstore.models import Evaluator
from contextstore.services.evaluators import EvaluationResult, evaluate, evaluator_create

JUDGE_PROMPT = "Question: {{input}}\nAnswer: {{output}}\nIs the answer polite?"


def make(workspace, actor, kind: str, name: str = "check", **version):
    checked = evaluator_version(kind=kind, **version)
    return evaluator_create(workspace=workspace, actor=actor, name=name, kind=kind, **checked).latest


@pytest.fixture
def judge_endpoint(endpoint, settings):
    settings.PLAYGROUND_API_KEY = "sk-judge"
    return endpoint


def test_a_regex_passes_when_the_reply_matches_and_says_where(workspace, actor):
    version = make(workspace, actor, "regex", config={"pattern": r"ticket #\d+", "ignore_case": True})
    assert evaluate(version, input="hi", output={"role": "assistant", "content": "See TICKET #42."}) == \
        EvaluationResult(True, "boolean", "The pattern was found at character 4: 'TICKET #42'.")
    assert evaluate(version, input="hi", output="no number").value is False


def test_a_regex_that_must_not_match_fails_when_it_does(workspace, actor):
    version = make(workspace, actor, "regex", config={"pattern": "sorry", "must_match": False})
    assert evaluate(version, input="", output="I am sorry").value is False
    assert evaluate(version, input="", output="Done.").value is True


def test_a_json_schema_checks_the_reply_parsed_and_names_the_failing_path(workspace, actor):
    schema = {"type": "object", "required": ["city"],
              "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}}
    version = make(workspace, actor, "json_schema", config={"schema": schema})
    assert evaluate(version, input="", output='{"city": "Oslo", "days": 3}').value is True
    bad = evaluate(version, input="", output='{"city": "Oslo", "days": 0}')
    assert (bad.value, bad.reason) == (False, "At days: 0 is less than the minimum of 1")
    not_json = evaluate(version, input="", output="Oslo, 3 days")
    assert not_json.value is False and not_json.reason.startswith("The output is not JSON")
    assert not_json.ok  # a failed check is a score, not an error


def test_a_schema_that_cannot_be_applied_is_an_error_not_a_crash(workspace, actor):
    version = make(workspace, actor, "json_schema", config={"schema": {"$ref": "https://example.com/s.json"}})
    result = evaluate(version, input="", output="{}")
    assert result.value is None and result.error.startswith("The schema could not be applied")


def test_a_tool_check_finds_the_tool_and_its_arguments(workspace, actor):
    called = make(workspace, actor, "tool_call", name="searched",
                  config={"check": "called", "tool": "search", "arguments": {"filters": {"lang": "en"}}})
    calls = [{"name": "fetch", "arguments": "{}"},
             {"name": "search", "arguments": json.dumps({"q": "x", "filters": {"lang": "en", "n": 3}})}]
    assert evaluate(called, input="", output=None, call_data={"tool_calls": calls}).value is True
    other = [{"name": "search", "arguments": {"q": "x", "filters": {"lang": "de"}}}]
    result = evaluate(called, input="", output=None, call_data={"tool_calls": other})
    assert result.value is False and "never with arguments holding" in result.reason
    none = evaluate(called, input="", output={"role": "assistant", "content": "hi"})
    assert (none.value, none.reason) == (False, "search was not called (called: no tool).")
    # the tool calls of an output message count when call_data names none
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    assert evaluate(called, input="", output=message).value is True


def test_a_tool_check_can_refuse_a_tool_or_any_failed_one(workspace, actor):
    never = make(workspace, actor, "tool_call", name="no-delete",
                 config={"check": "not_called", "tool": "delete"})
    assert evaluate(never, input="", output=None,
                    call_data={"tool_calls": [{"name": "delete", "arguments": {}}]}).value is False
    no_failed = make(workspace, actor, "tool_call", name="tools-ok", config={"check": "no_failed"})
    assert evaluate(no_failed, input="", output=None, call_data={"tool_errors": []}).value is True
    failed = evaluate(no_failed, input="", output=None, call_data={"tool_errors": ["search"]})
    assert (failed.value, failed.reason) == (False, "Failed tools: search.")


def test_cost_and_latency_limits_read_the_calls_figures(workspace, actor):
    cost = make(workspace, actor, "cost_limit", name="cheap", config={"max_cost": 0.01})
    assert evaluate(cost, input="", output="", call_data={"cost": 0.004}) == EvaluationResult(
        True, "boolean", "The cost was $0.004000, within the limit of $0.010000.")
    assert evaluate(cost, input="", output="", call_data={"cost": 0.02}).value is False
    unknown = evaluate(cost, input="", output="", call_data={})
    assert (unknown.ok, unknown.value, unknown.error) == (False, None, "No cost was recorded for this call.")
    latency = make(workspace, actor, "latency_limit", name="fast", config={"max_ms": 2000})
    assert evaluate(latency, input="", output="", call_data={"latency_ms": 2500}).reason == \
        "The latency was 2500 ms, over the limit of 2000 ms."


def test_a_judge_sends_its_prompt_to_its_model_and_reads_the_score(workspace, actor, judge_endpoint):
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt=JUDGE_PROMPT,
                   config={"score_type": "numeric"})
    judge_endpoint.reply = '```json\n{"score": 0.8, "reason": "Polite but terse."}\n```'
    result = evaluate(version, input=[{"role": "user", "content": "Where is it?"}],
                      output={"role": "assistant", "content": "Over there."})
    assert (result.value, result.data_type, result.reason, result.error) == (
        0.8, "numeric", "Polite but terse.", "")
    assert result.raw == judge_endpoint.reply
    [sent] = judge_endpoint.requests
    assert sent["auth"] == "Bearer sk-judge" and sent["body"]["model"] == "judge-1"
    assert sent["body"]["messages"][1]["content"] == \
        "Question: user: Where is it?\nAnswer: Over there.\nIs the answer polite?"
    assert '{"score": <a number>' in sent["body"]["messages"][0]["content"]


def test_a_categorical_judge_takes_only_its_categories(workspace, actor, judge_endpoint):
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt="{{output}}",
                   config={"score_type": "categorical", "categories": ["good", "bad"]})
    judge_endpoint.reply = '{"score": "good", "reason": "fine"}'
    assert evaluate(version, input="", output="x").value == "good"
    judge_endpoint.reply = '{"score": "great", "reason": "fine"}'
    result = evaluate(version, input="", output="x")
    assert (result.value, result.error) == (None, "The judge's score 'great' is not one of good, bad.")
    assert result.raw == judge_endpoint.reply


def test_a_categorical_judge_without_categories_takes_any_name(workspace, actor, judge_endpoint):
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt="{{output}}",
                   config={"score_type": "categorical"})
    judge_endpoint.reply = '{"score": " curt ", "reason": "short"}'
    assert evaluate(version, input="", output="x").value == "curt"
    assert "a category, a few words" in judge_endpoint.requests[0]["body"]["messages"][0]["content"]
    judge_endpoint.reply = '{"score": 3, "reason": "short"}'
    assert evaluate(version, input="", output="x").error == \
        "The judge's score 3 is not a category (a name of at most 200 characters)."


def test_a_regex_keeps_its_spaces(workspace, actor):
    version = make(workspace, actor, "regex", config={"pattern": " "})
    assert evaluate(version, input="", output="two words").value is True
    assert evaluate(version, input="", output="one").value is False


def test_a_judge_that_answers_no_score_or_fails_gives_an_error_not_a_score(workspace, actor, judge_endpoint):
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt="{{output}}",
                   config={"score_type": "boolean"})
    judge_endpoint.reply = "I think it is fine."
    result = evaluate(version, input="", output="x")
    assert (result.ok, result.value, result.error) == (
        False, None, "The judge's answer is not a JSON object with a score.")
    judge_endpoint.mode = "500"
    result = evaluate(version, input="", output="x")
    assert result.value is None
    assert result.error.startswith("The judge failed: The endpoint answered HTTP 500")


def test_a_judge_without_an_endpoint_says_so(workspace, actor, settings):
    settings.PLAYGROUND_BASE_URL = ""
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt="{{output}}",
                   config={"score_type": "boolean"})
    assert evaluate(version, input="", output="x").error == \
        "No judge endpoint is configured (PLAYGROUND_BASE_URL)."


def test_an_unreachable_judge_is_an_error(workspace, actor, settings):
    settings.PLAYGROUND_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    version = make(workspace, actor, "llm_judge", model="judge-1", prompt="{{output}}",
                   config={"score_type": "boolean"})
    result = evaluate(version, input="", output="x")
    assert result.value is None and result.error.startswith("The judge failed: Could not reach the endpoint")


def test_editing_an_evaluator_adds_a_version_and_keeps_the_old_one(workspace, actor):
    from contextstore.services.evaluators import evaluator_update
    version = make(workspace, actor, "regex", config={"pattern": "a"})
    evaluator = version.evaluator
    evaluator_update(evaluator=evaluator, actor=actor, fields={"sample_rate": 0.5},
                     version=evaluator_version(kind="regex", config={"pattern": "a"}))
    assert evaluator.versions.count() == 1  # the same settings: no new version
    evaluator_update(evaluator=evaluator, actor=actor,
                     version=evaluator_version(kind="regex", config={"pattern": "b"}))
    assert [(v.number, v.config["pattern"]) for v in evaluator.versions.all()] == [(2, "b"), (1, "a")]
    evaluator.refresh_from_db()
    assert evaluator.sample_rate == 0.5 and evaluator.latest.number == 2
    assert evaluate(version, input="", output="a").value is True  # version 1 still evaluates as before


@pytest.mark.parametrize(("kind", "version", "field"), [
    ("regex", {"config": {"pattern": "("}}, "pattern"),
    ("json_schema", {"config": {"schema": {"type": "nope"}}}, "schema"),
    ("llm_judge", {"model": "m", "prompt": "no placeholder"}, "prompt"),
    ("llm_judge", {"prompt": "{{output}}"}, "model"),
    ("llm_judge", {"model": "m", "prompt": "{{output}}",
                   "config": {"score_type": "categorical", "categories": []}}, "categories"),
    ("regex", {"config": {"pattern": ""}}, "pattern"),
    ("tool_call", {"config": {"check": "called"}}, "tool"),
    ("cost_limit", {"config": {"max_cost": -1}}, "max_cost"),
    ("latency_limit", {"config": {"max_ms": 0}}, "max_ms"),
    ("shell", {}, "kind"),
])
def test_the_door_refuses_settings_an_evaluator_cannot_run(kind, version, field):
    from contextstore.errors import InvalidInput
    with pytest.raises(InvalidInput) as refused:
        evaluator_version(kind=kind, **version)
    assert field in refused.value.details


def test_an_evaluator_kind_is_one_of_the_models_kinds():
    from contextstore.evaluatorspec import KINDS
    assert set(KINDS) == set(Evaluator.Kind.values)


def test_a_dataset_is_evaluated_item_by_item_without_writing(workspace, other_workspace, thread, actor):
    from contextstore.models import Score
    from contextstore.selectors.calls import llm_call_at
    from contextstore.services.datasets import dataset_add_call
    from contextstore.services.evaluators import evaluate_dataset
    from contextstore.services.events import event_append

    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMOutput", "content": "Hello, please sit."},
        {"type": "LLMComplete", "data": {"model": "m"}},
        {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "bye"}]}},
        {"type": "LLMOutput", "content": "Goodbye."},
        {"type": "LLMComplete", "data": {"model": "m"}}])
    for seq in (1, 4):
        item = dataset_add_call(dataset_name="greetings", thread=thread,
                                call=llm_call_at(thread=thread, seq=seq), actor=actor)
    version = make(workspace, actor, "regex", config={"pattern": "please"})
    results = [(i.pk, r.value, r.reason) for i, r in evaluate_dataset(version, dataset=item.dataset)]
    assert [value for _, value, _ in results] == [True, False]
    assert results[1][2] == "The pattern was not found."
    assert not Score.objects.exists()
    rival = make(other_workspace, actor, "regex", name="other", config={"pattern": "please"})
    assert list(evaluate_dataset(rival, dataset=item.dataset)) == []  # another workspace's items
