"""The shape of a collapse's request, as every door that asks for one checks it (the API's
POST collapse/, the dashboard's collapse form, the summarizer worker with the text a
summarizer wrote): a working-context range and a summary text. services.collapses trusts it;
what needs the thread (no active events in the range, an exchange it would split) stays there.
"""

from typing import Any

from django.conf import settings

from contextstore.errors import InvalidInput, PayloadTooLarge
from contextstore.ranges import check_range


def check_summary_text(summary_text: Any) -> str:
    """Not blank, and within an event's content limit (the Summary event holds it)."""
    if not isinstance(summary_text, str) or not summary_text.strip():
        raise InvalidInput("summary_text is required.", details={"summary_text": "required"})
    limit = settings.CONTEXTSTORE["MAX_EVENT_CONTENT_BYTES"]
    if len(summary_text.encode()) > limit:
        raise PayloadTooLarge(f"summary_text is larger than {limit} bytes.",
                              details={"summary_text": f"at most {limit} bytes"})
    return summary_text


def check_collapse(start_position: Any, end_position: Any, summary_text: Any) -> None:
    """A collapse's input, refused before anything changes."""
    check_range(start_position, end_position)
    check_summary_text(summary_text)
