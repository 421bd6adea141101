"""The login page after too many wrong passwords, in a real browser: the form fills, the lockout
page says why and for how long, and the right password does not sign in meanwhile."""

from django.contrib.auth import get_user_model

from tests.browser.conftest import screenshot


def test_a_person_who_keeps_guessing_is_told_to_wait_and_is_not_signed_in(browser, live_server,
                                                                           transactional_db, settings):
    settings.LOGIN_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT = 3
    get_user_model().objects.create_user("dora", password="pw-for-tests-123")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def log_in(password: str) -> None:
        page.goto("/accounts/login/")
        page.fill("#id_username", "dora")
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()

    for _ in range(3):
        log_in("wrong")
    assert page.locator("#locked-out").is_visible()
    log_in("pw-for-tests-123")
    assert page.locator("#locked-out h1").inner_text() == "Too many login attempts"
    assert "0:15:00" in page.locator("#locked-out").inner_text()
    screenshot(page, "login-locked-out")
    page.goto("/")
    assert "/accounts/login/" in page.url  # not signed in
    assert errors == []
    context.close()
