"""The evaluation loop clicked through: an editor makes an LLM judge (a local fake endpoint), a
new call arrives, a real worker (the embedded filesystem broker) scores it when beat's task
runs, and the score on the session page links to the evaluator version that gave it; an edit
makes version 2; axe finds nothing on the evaluator pages at either size."""

import pytest
from playwright.sync_api import expect

from contextstore import tasks
from contextstore.models import Evaluator
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.fake_chat import fake_chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def check_axe(page, name: str, problems: dict) -> None:
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        problems[f"{name}-{width}"] = axe_violations(page)
    screenshot(page, f"{name}-390")
    page.set_viewport_size({"width": 1280, "height": 800})


def test_a_judge_made_in_the_dashboard_scores_a_new_call_with_its_provenance(
        page, workspace, actor, settings, make_fs_worker):
    problems: dict = {}
    session = session_ensure(workspace=workspace, key="eval-1", title="Keys", agent="helper", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    with fake_chat() as judge:
        judge.reply = '{"score": true, "reason": "It says where the keys are."}'
        settings.PLAYGROUND_BASE_URL = judge.base_url
        make_fs_worker(PLAYGROUND_BASE_URL=judge.base_url, EVALUATOR_SETTLE_SECONDS="0").start()

        page.goto("/evaluators/")
        expect(page.locator("#evaluators")).to_contain_text("No evaluators yet")
        check_axe(page, "evaluators-empty", problems)
        page.get_by_role("link", name="New evaluator").click()
        check_axe(page, "evaluator-kinds", problems)
        page.get_by_role("link", name="LLM judge").click()
        page.get_by_label("Name (the scores it writes").fill("answers-the-question")
        page.get_by_label("Judge model").fill("judge-1")
        page.get_by_label("Prompt").fill("Question: {{input}}\nAnswer: {{output}}\nDoes it answer?")
        page.get_by_label("Score type").select_option("boolean")
        check_axe(page, "evaluator-new-judge", problems)
        page.get_by_role("button", name="Create evaluator").click()
        expect(page.locator("h1")).to_have_text("answers-the-question")
        expect(page.locator("#v1")).to_contain_text("judge-1")
        expect(page.locator("#evaluations")).to_contain_text("Nothing evaluated yet")

        # a new call arrives, and beat's pass hands it to the worker
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallStart", "data": {
                "model": "gpt-4o", "messages": [{"role": "user", "content": "Where are my keys?"}]}},
            {"type": "LLMOutput", "content": "In the drawer by the door."},
            {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 12, "output_tokens": 8}}])
        tasks.evaluate_online.delay()

        page.goto(f"/sessions/{session.pk}/")
        score = page.locator("#scores tr.score[data-score='answers-the-question']")
        for _ in range(60):
            if score.count():
                break
            page.wait_for_timeout(1000)
            page.reload()
        expect(score).to_contain_text("true")
        expect(score).to_contain_text("It says where the keys are.")
        link = score.get_by_role("link", name="evaluator answers-the-question v1")
        check_axe(page, "session-evaluator-score", problems)
        link.click()
        expect(page).to_have_url(f"{page.url.split('#')[0].split('/evaluators/')[0]}"
                                 f"/evaluators/{Evaluator.objects.get().pk}/#v1")
        row = page.locator("#evaluations tr.evaluation")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("call #1")
        row.locator("summary").click()
        expect(row).to_contain_text('"reason": "It says where the keys are."')
        body = judge.requests[0]["body"]
        assert body["model"] == "judge-1"
        assert body["messages"][1]["content"] == \
            "Question: user: Where are my keys?\nAnswer: In the drawer by the door.\nDoes it answer?"
        check_axe(page, "evaluator-detail", problems)

        # an edit makes version 2; version 1 stays, and the list says v2
        page.get_by_label("Judge model").fill("judge-2")
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#v2")).to_contain_text("current")
        expect(page.locator("#v1")).to_contain_text("judge-1")
        page.goto("/evaluators/")
        expect(page.locator("#evaluators tr[data-evaluator='answers-the-question']")).to_contain_text("v2")
        page.get_by_role("button", name="Disable answers-the-question").click()
        expect(page.get_by_role("button", name="Enable answers-the-question")).to_be_visible()
        check_axe(page, "evaluators-list", problems)
    assert not any(problems.values()), problems
    assert page.problems == [], page.problems
