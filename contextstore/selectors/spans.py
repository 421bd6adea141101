"""A run's OpenTelemetry spans as a waterfall: the span tree of the run (an agent span and
what ran under it, or a whole trace), each span's depth, start offset and duration."""

from dataclasses import dataclass

from contextstore.models import OtelSpan, Thread

MAX_SPANS = 2000
STATUS_ERROR = 2


@dataclass
class SpanRow:
    span: OtelSpan
    depth: int
    offset_ms: float
    duration_ms: float
    left: float  # percent of the run's time
    width: float

    @property
    def indent(self) -> int:
        return min(self.depth, 3)  # the stylesheet's depth-1..3 rows

    @property
    def failed(self) -> bool:
        return self.span.status_code == STATUS_ERROR


def run_spans(*, thread: Thread, run_id: str) -> list[SpanRow]:
    """The run's spans in tree order (parents before children, siblings by start). A run id is
    an agent span's id or, when no agent span was above, the trace id (services/otlp)."""
    fields = ("trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns",
              "status_code", "status_message", "scope")
    spans = OtelSpan.objects.filter(workspace_id=thread.workspace_id).only(*fields)
    if len(run_id) == 32:
        found = list(spans.filter(trace_id=run_id).order_by("start_ns")[:MAX_SPANS])
        held = {f.span_id for f in found}  # once: per span it was quadratic (2 s for 2,000 spans)
        roots = [s for s in found if s.parent_span_id not in held]
    else:
        root = spans.filter(span_id=run_id).first()
        if root is None:
            return []
        found = list(spans.filter(trace_id=root.trace_id).order_by("start_ns")[:MAX_SPANS])
        roots = [s for s in found if s.span_id == run_id]
    children: dict[str, list[OtelSpan]] = {}
    for span in found:
        children.setdefault(span.parent_span_id, []).append(span)
    ordered: list[tuple[OtelSpan, int]] = []
    stack = [(r, 0) for r in reversed(roots)]
    seen: set[str] = set()
    while stack:
        span, depth = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        ordered.append((span, depth))
        stack.extend((c, depth + 1) for c in reversed(children.get(span.span_id, [])))
    if not ordered:
        return []
    begin = min(s.start_ns for s, _ in ordered)
    total = max(max(s.end_ns for s, _ in ordered) - begin, 1)
    return [SpanRow(span=s, depth=d, offset_ms=(s.start_ns - begin) / 1e6,
                    duration_ms=max(s.end_ns - s.start_ns, 0) / 1e6,
                    left=round(100 * (s.start_ns - begin) / total, 2),
                    width=round(max(100 * (s.end_ns - s.start_ns) / total, 0.3), 2))
            for s, d in ordered]
