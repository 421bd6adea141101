"""Dashboard input: filter forms for lists and small forms for actions.

Forms only parse; every change is made by a service.
"""

from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextstore.collapsespec import check_summary_text
from contextstore.errors import DomainError, InvalidInput
from contextstore.eventspec import EVENT_TYPES
from contextstore.models import ContextBlock, Score
from contextstore.ranges import positive_int
from contextstore.selectors.scores import FILTER_HELP, ScoreFilter, parse_score_filter


def parse_cursor(raw: str | None) -> tuple[datetime, int] | None:
    """A sessions keyset cursor `<iso time>~<id>`; None when absent or malformed."""
    if not raw or "~" not in raw:
        return None
    stamp, _, pk = raw.rpartition("~")
    try:
        when = parse_datetime(stamp)
    except ValueError:  # well formed but not a date (month 13): a malformed cursor
        return None
    found = positive_int(pk)
    if when is None or found is None:
        return None
    return when, found


def format_cursor(when: datetime, pk: int) -> str:
    return f"{when.isoformat()}~{pk}"


class SessionFilterForm(forms.Form):
    """The session list's search and filters; every field is optional and they combine."""

    ARCHIVED = (("", "Open"), ("yes", "Archived"), ("all", "All"))
    ACTIVE = (("", "Any time"), ("hour", "Last hour"), ("day", "Last day"))

    q = forms.CharField(required=False, max_length=200)
    agent = forms.CharField(required=False, max_length=200)
    user = forms.CharField(required=False, max_length=255)
    model = forms.CharField(required=False, max_length=200)
    archived = forms.ChoiceField(required=False, choices=ARCHIVED)
    errors = forms.BooleanField(required=False)  # type: ignore[assignment]  # a field, not Form.errors
    active = forms.ChoiceField(required=False, choices=ACTIVE)
    cost_min = forms.DecimalField(required=False, min_value=0, max_digits=14, decimal_places=6,
                                  label="Cost from")
    cost_max = forms.DecimalField(required=False, min_value=0, max_digits=14, decimal_places=6,
                                  label="Cost to")
    tokens_min = forms.IntegerField(required=False, min_value=0, max_value=2**62, label="Tokens from")
    tokens_max = forms.IntegerField(required=False, min_value=0, max_value=2**62, label="Tokens to")
    active_from = forms.DateField(required=False, label="Active from")
    active_to = forms.DateField(required=False, label="Active to")
    score = forms.CharField(required=False, max_length=300, label="Score", help_text=FILTER_HELP)

    def clean_score(self) -> ScoreFilter | None:
        raw = self.cleaned_data.get("score") or ""
        if not raw.strip():
            return None
        try:
            return parse_score_filter(raw)
        except InvalidInput as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self):
        data = super().clean()
        for low, high, what in (("cost_min", "cost_max", "cost"), ("tokens_min", "tokens_max", "tokens"),
                                ("active_from", "active_to", "last activity")):
            if data.get(low) is not None and data.get(high) is not None and data[low] > data[high]:
                raise forms.ValidationError(f"The {what} range is upside down: 'from' is after 'to'.")
        return data

    def active_range(self) -> tuple[datetime | None, datetime | None]:
        """[from, to) for last activity: the quick choice (last hour/day) and the typed days,
        whole days in the server's time zone, `to` included; the narrower bound wins."""
        data = self.cleaned_data
        delta = {"hour": timedelta(hours=1), "day": timedelta(days=1)}.get(data.get("active") or "")
        start = timezone.now() - delta if delta else None
        if data.get("active_from"):
            day = timezone.make_aware(datetime.combine(data["active_from"], time.min))
            start = max(start, day) if start else day
        end = None
        if data.get("active_to") and data["active_to"] < date.max:
            end = timezone.make_aware(datetime.combine(data["active_to"] + timedelta(days=1), time.min))
        return start, end

    def filters(self) -> dict[str, Any]:
        """selectors.sessions.workspace_sessions's filters (q aside) from the cleaned data (the
        session list's, and an alert rule scoped to a saved view of it)."""
        data = self.cleaned_data if self.is_bound else {}
        archived = {"": False, "yes": True, "all": None}.get(data.get("archived") or "", False)
        return {
            "agent": data.get("agent") or None, "user_id": data.get("user") or None,
            "archived": archived, "model": data.get("model") or None,
            "errors": bool(data.get("errors")),
            "cost": (data.get("cost_min"), data.get("cost_max")),
            "tokens": (data.get("tokens_min"), data.get("tokens_max")),
            "active": self.active_range() if data else (None, None),
            "score": data.get("score"),
        }

    def problems(self) -> list[str]:
        """The errors as sentences naming the field, for the message above the list."""
        out: list[str] = []
        # super(): the class body names a field `errors` too (the metaclass takes it off the class)
        for name, errors in super().errors.items():
            label = self.fields[name].label or name.title() if name in self.fields else ""
            out.extend(f"{label}: {e}" if label else str(e) for e in errors)
        return out


class EventFilterForm(forms.Form):
    """Timeline filters. Runtime-only events and cleared ones are hidden unless asked for."""

    type = forms.MultipleChoiceField(required=False, choices=[(t, t) for t in EVENT_TYPES])
    q = forms.CharField(required=False, max_length=200)
    run = forms.CharField(required=False, max_length=200)
    call = forms.CharField(required=False, max_length=200)
    runtime = forms.BooleanField(required=False)
    cleared = forms.BooleanField(required=False)

    def narrows(self) -> bool:
        """True when the timeline shows a subset that summary cards would not fit into."""
        data = self.cleaned_data
        return bool(data.get("q") or data.get("run") or data.get("call")
                    or (data.get("type") and "Summary" not in data["type"]))


class RangeForm(forms.Form):
    """A selected working-context range: positions, both ends included."""

    start_position = forms.IntegerField(min_value=1)
    end_position = forms.IntegerField(min_value=1)

    def clean(self):
        data = super().clean()
        start, end = data.get("start_position"), data.get("end_position")
        if start is not None and end is not None and start > end:
            data["start_position"], data["end_position"] = end, start
        return data


class CollapseForm(RangeForm):
    summary = forms.CharField(max_length=20_000, strip=True)
    # the person confirmed the range grown to the tool exchanges it would split
    widen = forms.BooleanField(required=False)

    def clean_summary(self) -> str:
        try:
            return check_summary_text(self.cleaned_data["summary"])
        except DomainError as exc:  # (the same words as the API's)
            raise forms.ValidationError(exc.message) from None


class ForkForm(RangeForm):
    name = forms.CharField(max_length=200)
    widen = forms.BooleanField(required=False)


class BlockForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=(("value", "Fixed value"), ("expr", "Live expression")),
                             required=False)
    value = forms.CharField(required=False, widget=forms.Textarea, strip=False)
    placement = forms.ChoiceField(choices=ContextBlock.Placement.choices)
    order = forms.IntegerField(initial=0, min_value=-(2**31), max_value=2**31 - 1)
    # A suppressed block keeps its row but renders nothing (Nooa's None value).
    suppressed = forms.BooleanField(required=False)


class DiffForm(forms.Form):
    a = forms.IntegerField(min_value=0)
    b = forms.IntegerField(min_value=0)


def first_error(form: forms.Form) -> str:
    """One readable sentence for a form that did not validate."""
    for field, errors in form.errors.items():
        label = "" if field == "__all__" else f"{field.replace('_', ' ')}: "
        return f"{label}{errors[0]}"
    return "The form is not valid."


class CommentForm(forms.Form):
    text = forms.CharField(max_length=10_000, widget=forms.Textarea(attrs={"rows": 3}), label="Comment",
                           strip=False)


class ScoreForm(forms.Form):
    """A score typed on the session page; the value is read as its data type asks."""

    name = forms.CharField(max_length=100)
    data_type = forms.ChoiceField(choices=Score.DataType.choices, label="Type")
    value = forms.CharField(max_length=200, help_text="a number, true/false, or a category")
    comment = forms.CharField(required=False, max_length=10_000)

    def typed_value(self) -> object:
        """The value as the service takes it: a float, a bool, or the text (the service says
        what is wrong with it)."""
        raw = self.cleaned_data["value"].strip()
        kind = self.cleaned_data["data_type"]
        if kind == Score.DataType.BOOLEAN:
            return {"true": True, "false": False}.get(raw.lower(), raw)
        if kind == Score.DataType.NUMERIC:
            try:
                return float(raw)
            except ValueError:
                return raw
        return raw
