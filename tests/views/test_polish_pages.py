"""Issue 50's polish on pages: one h1 that says what the page is, the
audit entries' name in admin, the login form's password field."""
import re

from contextstore.models import AuditLog, Event
from contextstore.services.events import event_append
from tests.conftest import messages


def h1s(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h1[^>]*>(.*?)</h1>", html, re.S)]


def test_what_the_model_sees_says_so_in_its_h1(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=messages(2))
    html = editor_client.get(f"/threads/{thread.pk}/context/").content.decode()
    assert h1s(html) == [f"What the model sees: {thread.name}"]


def test_an_audit_entry_is_named_by_its_action_target_and_time_in_admin(admin_client, thread, actor):
    event_append(thread=thread, events=messages(1), actor=actor)
    entry = AuditLog.objects.filter(action="events.append").first() or AuditLog.objects.first()
    name = str(entry)
    assert name.startswith(f"{entry.action} on {entry.target_type} {entry.target_id} by ")
    assert re.search(r" at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", name), name
    page = admin_client.get(f"/admin/contextstore/auditlog/{entry.pk}/change/").content.decode()
    assert "AuditLog object" not in page and f"{entry.action} on {entry.target_type}" in page
    assert Event.objects.count() == 1


def test_the_login_forms_password_field_is_labelled_for_the_password_manager(client):
    html = client.get("/accounts/login/").content.decode()
    assert '<label for="id_password">Password</label>' in html
    assert re.search(r'<input type="password" name="password" id="id_password" '
                     r'autocomplete="current-password"', html)
    assert h1s(html) == ["Log in to contextstore"]
