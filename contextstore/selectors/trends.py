"""A workspace's trends: cost, tokens, errors, prompt-cache hit rate and p50/p95 model-call
latency per day, per model or per agent.

Model calls are the LLMComplete events (their usage and cost, as contextstore.usage reads them);
errors are the events with is_error (what Thread.error_count counts). Sums are grouped in SQL,
reading the numbers out of the JSON text `data` column; a value that is not a JSON number counts
as absent. Latency is the time from the call's LLMCallStart (paired as selectors/calls pairs them)
to its LLMComplete, else the `latency_ms` the agent reported. Percentiles are PostgreSQL's
percentile_cont (linear interpolation) there, and the same computation in Python on SQLite.
"""

import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import (
    Aggregate,
    Case,
    CharField,
    Count,
    F,
    FloatField,
    Func,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from contextstore.models import Event, Session, Workspace
from contextstore.selectors.calls import CALL_END, CALL_START

RANGES = (7, 30, 90)  # days a trends page looks back
GROUPS = ("model", "agent")
MAX_SERIES = 6  # the costliest keys get a line of their own; the rest are summed as OTHER
OTHER = "(other)"
NONE = "(none)"
_KEY = re.compile(r"^[a-z_]+$")


class JSONPath(Func):
    """A value inside the JSON text of `data`, at `path` (keys, written here, never input): a
    JSON number as a number, a JSON string as text (`text=True`); anything else is NULL."""

    output_field: Any = FloatField()

    def __init__(self, expression: Any, *path: str, text: bool = False) -> None:
        assert all(_KEY.match(k) for k in path)
        self.path, self.text = path, text
        super().__init__(expression, output_field=CharField() if text else FloatField())

    def as_sql(self, compiler: Any, conn: Any, **extra: Any) -> Any:  # type: ignore[override]
        data, params = compiler.compile(self.source_expressions[0])
        if conn.vendor == "postgresql":
            # json, not jsonb: jsonb refuses the \\u0000 the JSON text may hold (contextstore.fields)
            doc, path = f"(({data})::json)", "'{" + ",".join(self.path) + "}'"
            kind, cast = ("string", "") if self.text else ("number", "::double precision")
            sql = f"CASE WHEN json_typeof({doc} #> {path}) = '{kind}' THEN ({doc} #>> {path}){cast} END"
            return sql, [*params, *params, *params]
        path = "'$." + ".".join(self.path) + "'"
        kinds = "('text')" if self.text else "('integer', 'real')"
        sql = (f"CASE WHEN json_valid({data}) AND json_type({data}, {path}) IN {kinds} "
               f"THEN json_extract({data}, {path}) END")
        return sql, [*params, *params, *params]


def _num(*keys: str) -> Any:
    """The first of `keys` the call reports, in its data or in a provider's `usage` object there."""
    return Coalesce(*(JSONPath(F("data"), *where, key) for key in keys for where in ((), ("usage",))),
                    output_field=FloatField())


class PercentileCont(Aggregate):
    """PostgreSQL's percentile_cont(p): the value at fraction p of the ordered values, interpolated."""

    function = "percentile_cont"
    template = "%(function)s(%(p)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field: Any = FloatField()

    def __init__(self, expression: Any, *, p: float) -> None:
        super().__init__(expression, p=float(p))


class Millis(Func):
    """Milliseconds from the first timestamp to the second."""

    output_field: Any = FloatField()

    def as_sql(self, compiler: Any, conn: Any, **extra: Any) -> Any:  # type: ignore[override]
        (a, pa), (b, pb) = (compiler.compile(e) for e in self.source_expressions)
        if conn.vendor == "postgresql":
            return f"(EXTRACT(EPOCH FROM ({b}) - ({a})) * 1000)", [*pa, *pb]
        return f"((julianday({b}) - julianday({a})) * 86400000.0)", [*pa, *pb]


def _call_expressions(*, latency: bool = True) -> dict[str, Any]:
    """Per LLMComplete: its usage (as contextstore.usage.cache_usage reads it) and latency."""
    read_a, made_a = _num("cache_read_input_tokens"), _num("cache_creation_input_tokens")
    read_o = Coalesce(JSONPath(F("data"), "prompt_tokens_details", "cached_tokens"),
                      JSONPath(F("data"), "usage", "prompt_tokens_details", "cached_tokens"),
                      JSONPath(F("data"), "input_tokens_details", "cached_tokens"),
                      JSONPath(F("data"), "usage", "input_tokens_details", "cached_tokens"),
                      _num("cached_tokens"), output_field=FloatField())
    read_g, made_g = _num("cache_read"), _num("cache_creation")
    inp = _num("input_tokens", "prompt_tokens")
    zero = Value(0.0)
    # which convention the call's usage follows decides what its cache tokens are counted against
    cache_read = Case(
        When(Q(a_read__isnull=False) | Q(a_made__isnull=False), then=Coalesce("a_read", zero)),
        When(o_read__isnull=False, then=F("o_read")),
        When(Q(g_read__isnull=False) | Q(g_made__isnull=False), then=Coalesce("g_read", zero)),
        output_field=FloatField())
    cache_input = Case(
        When(Q(a_read__isnull=False) | Q(a_made__isnull=False),
             then=Coalesce("inp", zero) + Coalesce("a_read", zero) + Coalesce("a_made", zero)),
        When(o_read__isnull=False, then=Coalesce("inp", zero)),
        When(Q(g_read__isnull=False) | Q(g_made__isnull=False),
             then=Func(Coalesce("inp", zero), Coalesce("g_read", zero) + Coalesce("g_made", zero),
                       function="GREATEST" if connection.vendor == "postgresql" else "MAX",
                       output_field=FloatField())),
        output_field=FloatField())
    start = (Event.objects.filter(thread_id=OuterRef("thread_id"), type=CALL_START, seq__lt=OuterRef("seq"),
                                  call_id=OuterRef("call_id"))
             .annotate(r=Coalesce("run_id", Value(0)))
             .filter(Q(call_id__gt="") | Q(r=Coalesce(OuterRef("run_id"), Value(0))))
             .order_by("-seq").values("occurred_at")[:1])
    out = {"a_read": read_a, "a_made": made_a, "o_read": read_o, "g_read": read_g, "g_made": made_g,
           "inp": inp, "cache_read": cache_read, "cache_input": cache_input}
    if latency:
        out["latency"] = Coalesce(Millis(Subquery(start), F("occurred_at")), _num("latency_ms"),
                                  output_field=FloatField())
    return out


def _group_key(group: str) -> Any:
    if group == "agent":
        return F("thread__session__agent")
    return Coalesce(JSONPath(F("data"), "model", text=True), Value(""), output_field=CharField())


def _series_key(top: list[str]) -> Any:
    """The group's key, or OTHER past the top ones: folded in SQL, so percentiles stay exact."""
    return Case(When(raw__in=top, then=F("raw")), default=Value(OTHER), output_field=CharField())


def percentile(values: list[float], p: float) -> float | None:
    """PostgreSQL's percentile_cont: linear interpolation between the two nearest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    at = p * (len(ordered) - 1)
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


@dataclass
class Cell:
    """One day of one key."""

    calls: int = 0
    cost: Decimal = Decimal(0)
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_input: int = 0
    errors: int = 0
    p50: float | None = None
    p95: float | None = None
    latencies: list[float] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input + self.output

    @property
    def hit_rate(self) -> float | None:
        return round(100 * self.cache_read / self.cache_input, 1) if self.cache_input else None


@dataclass
class Trends:
    days: list[date]
    group: str
    keys: list[str]  # series, costliest first (OTHER last when keys were folded)
    cells: dict[tuple[date, str], Cell]
    totals: dict[str, Cell]  # per key over the whole range

    def cell(self, day: date, key: str) -> Cell:
        return self.cells.get((day, key)) or Cell()


def workspace_trends(*, workspace: Workspace, days: int = 30, group: str = "model",
                     today: date | None = None) -> Trends:
    """The workspace's last `days` days (today included) grouped by day and `group`."""
    if days not in RANGES or group not in GROUPS:
        raise ValueError("days must be one of 7, 30, 90 and group one of model, agent")
    today = today or timezone.localdate()
    first = today - timedelta(days=days - 1)
    span = [first + timedelta(days=i) for i in range(days)]
    since = timezone.make_aware(datetime.combine(first, time.min))
    events = Event.objects.filter(thread__workspace=workspace, occurred_at__gte=since,
                                  occurred_at__lt=since + timedelta(days=days)).annotate(
        day=TruncDate("occurred_at"), raw=_group_key(group))
    ranked = _ranked(events)
    top = ranked if len(ranked) <= MAX_SERIES else ranked[:MAX_SERIES - 1]
    events = events.annotate(key=F("raw") if top == ranked else _series_key(top))
    calls = events.filter(type=CALL_END).annotate(**_call_expressions())
    cells: dict[tuple[date, str], Cell] = {}
    sums = calls.values("day", "key").annotate(
        n=Count("id"), cost_sum=Sum(_num("cost")), in_sum=Sum("inp"),
        out_sum=Sum(_num("output_tokens", "completion_tokens")),
        read_sum=Sum("cache_read"), cache_sum=Sum("cache_input")).order_by()
    if connection.vendor == "postgresql":
        sums = sums.annotate(lat50=PercentileCont(F("latency"), p=0.5),
                             lat95=PercentileCont(F("latency"), p=0.95))
    for row in sums:
        cells[(row["day"], row["key"] or NONE)] = Cell(
            calls=row["n"], cost=Decimal(str(round(row["cost_sum"] or 0, 9))).normalize(),
            input=round(row["in_sum"] or 0), output=round(row["out_sum"] or 0),
            cache_read=round(row["read_sum"] or 0), cache_input=round(row["cache_sum"] or 0),
            p50=_float(row.get("lat50")), p95=_float(row.get("lat95")))
    if connection.vendor != "postgresql":
        for lat in calls.filter(latency__isnull=False).values("day", "key", "latency").order_by():
            cells[(lat["day"], lat["key"] or NONE)].latencies.append(lat["latency"])
        for c in cells.values():
            c.p50, c.p95 = percentile(c.latencies, 0.5), percentile(c.latencies, 0.95)
    for err in events.filter(is_error=True).values("day", "key").annotate(n=Count("id")).order_by():
        cells.setdefault((err["day"], err["key"] or NONE), Cell()).errors = err["n"]
    keys = [k or NONE for k in top] + ([OTHER] if top != ranked else [])
    totals: dict[str, Cell] = {}
    for (_, key), c in cells.items():
        t = totals.setdefault(key, Cell())
        for name in ("calls", "cost", "input", "output", "cache_read", "cache_input", "errors"):
            setattr(t, name, getattr(t, name) + getattr(c, name))
    return Trends(days=span, group=group, keys=keys, cells=cells, totals=totals)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _ranked(events: Any) -> list[str]:
    """The range's keys: the costliest calls first, then the most called, then by errors."""
    calls = {r["raw"]: (-(r["cost"] or 0), -r["n"]) for r in events.filter(type=CALL_END).values("raw")
             .annotate(cost=Sum(_num("cost")), n=Count("id")).order_by()}
    errors = {r["raw"]: -r["n"] for r in events.filter(is_error=True).values("raw")
              .annotate(n=Count("id")).order_by()}
    return sorted(calls.keys() | errors.keys(),
                  key=lambda k: (*calls.get(k, (0, 0)), errors.get(k, 0), k))


def cache_totals(*, workspace: Workspace, session: Session | None = None) -> dict[str, Any]:
    """Over every model call of the workspace (or of one session): calls, those whose usage
    reports cache tokens, the tokens read from the cache of their input, and the hit rate; one
    aggregate query (the cache pages' own figures look at the newest calls only)."""
    calls = Event.objects.filter(thread__workspace=workspace, type=CALL_END)
    if session is not None:
        calls = calls.filter(thread__session=session)
    sums = calls.annotate(**_call_expressions(latency=False)).aggregate(
        n=Count("id"), reporting=Count("cache_input"), read=Sum("cache_read"), input=Sum("cache_input"))
    read, total = round(sums["read"] or 0), round(sums["input"] or 0)
    return {"calls": sums["n"], "reporting": sums["reporting"], "cache_read": read, "input": total,
            "hit_rate": round(100 * read / total, 1) if total else None}
