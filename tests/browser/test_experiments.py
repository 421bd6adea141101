"""An experiment clicked through: a dataset's page → New experiment → Run (a real worker on the
embedded broker, against a local fake endpoint) → the comparison page, then a second experiment
compared with the first; axe finds nothing at either size on any of them."""

import pytest
from playwright.sync_api import expect

from contextstore.selectors.calls import llm_call_at
from contextstore.services.datasets import dataset_add_call
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.fake_chat import fake_chat
from tests.services.test_evaluate import make as make_version

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SIZES = ((1440, 900), (390, 844))


@pytest.fixture
def dataset(workspace, actor):
    session = session_ensure(workspace=workspace, key="exp-1", title="CI fix", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    for question in ("Why does CI fail?", "Which <b>test</b> is flaky?"):
        event_append(thread=thread, actor=actor, events=[
            {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": [
                {"role": "system", "content": "You fix failing tests."},
                {"role": "user", "content": question}]}},
            {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 300, "output_tokens": 20}},
            {"type": "LLMOutput", "role": "assistant", "content": f"Replayed answer to: {question}"}])
    for seq in (1, 4):
        item = dataset_add_call(dataset_name="ci questions", thread=thread,
                                call=llm_call_at(thread=thread, seq=seq), actor=actor)
    make_version(workspace, actor, "regex", name="mentions CI", config={"pattern": "CI"})
    return item.dataset


def test_dataset_new_experiment_run_and_compare(page, dataset, settings, make_fs_worker):
    problems = {}

    def check(name):
        for size in SIZES:
            page.set_viewport_size(dict(zip(("width", "height"), size, strict=True)))
            problems[f"{name}-{size[0]}"] = axe_violations(page)
        page.set_viewport_size({"width": 1440, "height": 900})

    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        make_fs_worker(PLAYGROUND_BASE_URL=server.base_url).start()
        page.goto(f"/datasets/{dataset.pk}/")
        expect(page.locator("details.new-experiment")).to_have_attribute("open", "")
        check("dataset")
        page.locator("#exp-name").fill("terse")
        page.locator("#exp-system").fill("Answer in one line.")
        page.locator("#exp-template").fill("Briefly: {input}")
        page.locator("#exp-model").fill("gpt-4o-mini")
        page.locator("#exp-temperature").fill("0")
        page.get_by_label("mentions CI (regular expression)").check()
        page.locator("text=Create experiment").click()
        expect(page.locator("h1")).to_have_text("terse")
        expect(page.locator("#run-status")).to_contain_text("Not run yet.")
        check("draft")
        page.locator("[data-run]").click()
        status = page.locator("#run-status")
        # Answered at once: queued for the worker, and the status polls until the page reloads.
        expect(status).to_have_attribute("data-poll", "")
        expect(status).to_have_attribute("data-status", "done", timeout=60_000)
        expect(status).to_contain_text("Done: 2 items")
        rows = page.locator(".experiment-row")
        expect(rows).to_have_count(2)
        expect(rows.nth(1).locator(".variant-output")).to_have_text(
            "Replayed answer to: Briefly: Which <b>test</b> is flaky?")
        expect(rows.nth(1).locator(".baseline-output")).to_have_text(
            "Replayed answer to: Which <b>test</b> is flaky?")
        expect(page.locator('#experiment-summary tr[data-evaluator="builtin:exact_match"]')).to_contain_text(
            "0.000")
        expect(rows.first.locator(".variant-side .experiment-scores")).to_contain_text("mentions CI: true")
        expect(rows.nth(1).locator(".baseline-side .experiment-scores")).to_contain_text("mentions CI: false")
        rows.first.locator("details.request-sent > summary").click()
        expect(rows.first.locator("details.request-sent")).to_contain_text("Answer in one line.")
        rows.first.locator("details.output-diff summary").click()
        expect(rows.first.locator(".word-diff ins")).to_contain_text("Briefly:")
        system = server.requests[0]["body"]["messages"][0]
        assert system == {"role": "system", "content": "Answer in one line."}
        check("compared")
        screenshot(page, "experiment-compared-1440")

        # A second experiment, its baseline the first, compared on its page.
        page.goto(f"/datasets/{dataset.pk}/")
        page.locator("details.new-experiment summary").click()
        page.locator("#exp-name").fill("as recorded")
        page.locator("#exp-baseline").select_option(label=f"terse (#{dataset.experiments.get().pk})")
        page.locator("text=Create experiment").click()
        page.locator("[data-run]").click()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "done", timeout=60_000)
        expect(page.locator("h2.compared-with")).to_contain_text("its baseline, terse")
        expect(page.locator(".experiment-row").first.locator(".deltas")).to_contain_text("Δ cost")
        expect(page.locator(".experiment-row").first.locator(".baseline-output")).to_have_text(
            "Replayed answer to: Briefly: Why does CI fail?")
        check("baseline-experiment")
        page.goto(f"/datasets/{dataset.pk}/")
        first, second = (dataset.experiments.get(name=n).pk for n in ("terse", "as recorded"))
        page.locator("#compare-a").select_option(label=f"terse (#{first})")
        page.locator("#compare-b").select_option(label=f"as recorded (#{second})")
        page.locator("#compare-experiments button").click()
        expect(page.locator("h1")).to_have_text("terse")
        expect(page.locator("h2.compared-with")).to_contain_text("Compared with as recorded")
        expect(page.locator(".experiment-row").first.locator(".deltas")).to_contain_text("Δ cost")
        check("two")
        page.set_viewport_size({"width": 390, "height": 844})
        screenshot(page, "experiment-two-390")
    assert not any(problems.values()), problems
    assert page.problems == [], page.problems
