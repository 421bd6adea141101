"""Scores and comments read: a session's, an event's, and the session list's score filter."""

import math
import re
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from contextstore.errors import InvalidInput
from contextstore.models import Comment, Score, Session, Thread

FILTER_HELP = ("name, or name:value — name:true / name:false (boolean), name:>=0.5 "
               "(numeric: = > >= < <=), name:good (categorical)")
_FILTER = re.compile(r"(?P<name>[^:]+)(?::(?P<op>>=|<=|=|>|<)?(?P<value>.*))?", re.S)
_OPS = {"=": "exact", ">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}


@dataclass(frozen=True)
class ScoreFilter:
    """Sessions with a score of this name (on the session or on one of its calls) whose value
    matches; `condition` is None for "has any score of this name"."""

    name: str
    condition: Q | None


def parse_score_filter(raw: str) -> ScoreFilter:
    """`accuracy`, `accuracy:>=0.5`, `helpful:true`, `tone:friendly` (see FILTER_HELP)."""
    match = _FILTER.fullmatch(raw.strip())
    name = match.group("name").strip() if match else ""
    if not match or not name:
        raise InvalidInput(f"score filter: {FILTER_HELP}.", details={"score": FILTER_HELP})
    op, value = match.group("op"), (match.group("value") or "").strip()
    if match.group("value") is None:
        return ScoreFilter(name, None)
    if not value:
        raise InvalidInput(f"score filter {raw!r} has no value: {FILTER_HELP}.",
                           details={"score": "value missing"})
    if value.lower() in ("true", "false") and op in (None, "="):
        return ScoreFilter(name, Q(data_type=Score.DataType.BOOLEAN, string_value=value.lower()))
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None and math.isfinite(number):
        return ScoreFilter(name, Q(data_type=Score.DataType.NUMERIC,
                                   **{f"value__{_OPS[op or '=']}": number}))
    if op not in (None, "="):
        raise InvalidInput(f"score filter {raw!r}: {op} needs a finite number.",
                           details={"score": "comparison needs a number"})
    return ScoreFilter(name, Q(data_type=Score.DataType.CATEGORICAL, string_value=value))


def sessions_scored(sessions: QuerySet[Session], *, workspace_id: int,
                    score: ScoreFilter) -> QuerySet[Session]:
    """`sessions` narrowed to those holding a matching score (an index walk over
    (workspace, name, session))."""
    found = Score.objects.filter(workspace_id=workspace_id, name=score.name)
    if score.condition is not None:
        found = found.filter(score.condition)
    return sessions.filter(pk__in=found.values("session_id"))


def session_scores(*, session: Session, limit: int = 200) -> list[Score]:
    """The session's scores and its calls', newest first."""
    return list(Score.objects.filter(session=session).select_related("thread", "evaluation__version")
                .order_by("-created_at", "-id")[:limit])


def event_scores(*, thread: Thread, seq: int) -> list[Score]:
    return list(Score.objects.filter(thread=thread, seq=seq).order_by("-created_at", "-id"))


def comments_on(*, session: Session, thread: Thread | None = None, seq: int | None = None,
                limit: int = 200) -> list[Comment]:
    """Comments on the session itself (thread None), or on one event, oldest first."""
    qs = (Comment.objects.filter(thread=thread, seq=seq) if thread is not None
          else Comment.objects.filter(session=session, thread__isnull=True))
    return list(qs.select_related("thread").order_by("created_at", "id")[:limit])


def comment_counts(*, thread: Thread, seqs: list[int]) -> dict[int, int]:
    """How many comments each of these events of the thread has (those with none left out)."""
    if not seqs:
        return {}
    rows = (Comment.objects.filter(thread=thread, seq__in=seqs).values("seq")
            .annotate(n=Count("id")).order_by())
    return {row["seq"]: row["n"] for row in rows if row["seq"] is not None}
