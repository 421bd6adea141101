"""The message a page shows after an action, with the control that takes it back.

An action stores one offer in the person's session; the next render of that thread's page
shows it once. The offer names a POST endpoint and its fields, so Undo is an ordinary form
(it works without JavaScript and passes the CSRF check like every other action).
"""

from typing import Any

from django.http import HttpRequest

from contextstore.models import Thread

KEY = "contextstore.undo"


def offer_undo(
    request: HttpRequest, *, thread: Thread, text: str, url: str | None = None,
    fields: dict[str, Any] | None = None, label: str = "Undo", link: str | None = None,
    link_text: str = "",
) -> None:
    """Show `text` on `thread`'s page after the redirect; with `url`, an Undo button posting
    `fields` there. Without a url the message says what happened and that it is final. `link`
    (with `link_text`) points at what the action made (a finished summary)."""
    request.session[KEY] = {"thread": thread.pk, "text": text, "url": url,
                            "fields": {k: str(v) for k, v in (fields or {}).items()},
                            "label": label, "link": link, "link_text": link_text}


def take_undo(request: HttpRequest, thread: Thread) -> dict[str, Any] | None:
    """The offer for this thread, removed from the session (it is shown once)."""
    offer = request.session.get(KEY)
    if not offer or offer.get("thread") != thread.pk:
        return None
    del request.session[KEY]
    return offer
