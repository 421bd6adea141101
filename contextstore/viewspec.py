"""Saved views' door: the list pages whose filters can be saved, what each page's query string
may hold, and the one normal form a saved query is stored in (services/saved_views.py).

A saved query is checked again whenever it is applied: a filter a page no longer knows, or a
value it no longer accepts, is left out and named in a notice, so an old view opens the page
(without that filter) instead of failing."""

from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode

from django.http import QueryDict

from contextstore.forms import SessionFilterForm
from contextstore.selectors.sessions import SESSION_SORTS
from contextstore.selectors.trends import GROUPS, RANGES

# Never part of a view: paging, the workspace switcher, the view being applied.
TRANSIENT = frozenset({"before", "ws", "view", "page"})
MAX_QUERY = 2000


@dataclass(frozen=True)
class Page:
    key: str  # SavedView.page
    url_name: str
    params: frozenset[str]  # the filters the page takes


PAGES: dict[str, Page] = {
    "sessions": Page("sessions", "contextstore:sessions",
                     frozenset(SessionFilterForm.base_fields) | {"sort"}),
    "trends": Page("trends", "contextstore:trends", frozenset({"days", "group"})),
    "store": Page("store", "contextstore:store", frozenset({"ns", "deleted"})),
}


def normalise(query: str) -> str:
    """The query string without empty values and transient keys, keys in order (the values of
    one key keep theirs: a namespace's labels are a path), so equal filters compare equal."""
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=False) if k not in TRANSIENT]
    return urlencode(sorted(pairs, key=lambda pair: pair[0]))


def check(page: str, query: str) -> tuple[str, list[str]]:
    """What of a saved `query` the page takes now, and a sentence for each thing left out."""
    spec = PAGES[page]
    pairs = parse_qsl(query, keep_blank_values=False)
    problems = [f"The filter “{k}” no longer exists." for k in dict.fromkeys(k for k, _ in pairs)
                if k not in spec.params and k not in TRANSIENT]
    kept = [(k, v) for k, v in pairs if k in spec.params]
    bad: set[str] = set()
    if page == "sessions":
        form = SessionFilterForm(QueryDict(urlencode(kept)))
        if not form.is_valid():
            bad |= {k for k in cast(Any, form).errors if k in spec.params}  # a field is named `errors`
            problems += form.problems()
        if any(k == "sort" and v.lstrip("-") not in SESSION_SORTS for k, v in kept):
            bad.add("sort")
            problems.append("The sort order it names no longer exists.")
    elif page == "trends":
        for k, v in kept:
            if (k == "days" and v not in {str(d) for d in RANGES}) or (k == "group" and v not in GROUPS):
                bad.add(k)
                problems.append(f"“{k}={v}” is no longer a choice.")
    kept = [(k, v) for k, v in kept if k not in bad]
    return urlencode(kept), problems
