"""The default summarizer: offline, deterministic, extractive.

It keeps what an agent needs to carry on — the task, the decisions (the latest first), the
errors, the tool outcomes — then fills the rest of the token cap with the most informative
sentences (TF-IDF ranked, near-duplicates dropped), and says how much it left out. Nested
summaries (a range containing earlier Summary events written by this module) are parsed back
into their sections, so the task and decisions survive a summary of summaries.
"""

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from contextstore.summarizers import Item, Summary
from contextstore.tokens import count_tokens, encoding

SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
WORD = re.compile(r"[a-z][a-z0-9_]+(?:[.'/-][a-z0-9_]+)*|\d+(?:\.\d+)?")
DECISION = re.compile(
    r"\b(decid\w*|chose|choose|chosen|go(?:ing)? with|will use|we'll use|let's use|settled on|"
    r"agreed|final(?:ly)?|conclu\w*|resolved|switch(?:ed|ing)? to|instead of|opted|approved|"
    r"the plan is|the fix is|root cause|fixed by|solution)\b",
    re.IGNORECASE,
)
STOP = frozenset(
    "the a an and or but if then else of to in on at by for with from as is are was were be been "
    "being it its this that these those there here we you i he she they them our your my me us "
    "not no do does did done have has had will would can could should may might must shall so "
    "than too very just also into out up down over under again more most some any all each such "
    "only own same what which who whom when where why how about after before while because "
    "let's ok okay yes sure please thanks thank".split()
)
SECTION_TITLES = {"decision": "Decisions", "error": "Errors", "tool": "Tool outcomes",
                  "point": "Key points"}
TITLE_TO_KIND = {title: kind for kind, title in SECTION_TITLES.items()}
NESTED_HEADER = re.compile(r"^Summary of (\d+) events?\b")
LEFT_OUT = {"task": "task statements", "error": "errors", "decision": "decisions",
            "tool": "tool outcomes", "point": "other sentences"}
MAX_LINE_CHARS = 2000  # long pastes are clipped before scoring; the cap applies later anyway


@dataclass
class Candidate:
    kind: str  # task, decision, error, tool, point
    text: str
    seq: int
    score: float = 0.0
    similar: int = 0  # near-duplicates folded into this line


def summarize(items: Sequence[Item], *, max_tokens: int) -> Summary:
    """Summarize `items` (oldest first) in at most `max_tokens` cl100k tokens."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    candidates, covered, kinds = _candidates(items)
    _rank(candidates)
    first = items[0].seq if items else 0
    last = items[-1].seq if items else 0
    header = _header(covered, kinds, first, last)
    chosen = _choose(candidates, header, max_tokens)
    text = _render(header, chosen, candidates)
    # Token boundaries shift a little when lines are joined: drop the weakest line until it fits.
    while count_tokens(text) > max_tokens and chosen:
        chosen.remove(min(chosen, key=lambda c: (c.kind == "task", _priority(c), c.score)))
        text = _render(header, chosen, candidates)
    if count_tokens(text) > max_tokens:
        text = clip(header, max_tokens)
    return Summary(text=text, backend="extractive")


def clip(text: str, max_tokens: int) -> str:
    """Cut text to at most max_tokens tokens, ending on an ellipsis when something was cut."""
    enc = encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    return enc.decode(ids[: max(max_tokens - 1, 0)]).rstrip() + "…"


def _sentences(text: str) -> list[str]:
    out = []
    for raw in SENTENCE_SPLIT.split(text[: MAX_LINE_CHARS * 8]):
        s = " ".join(raw.split())
        if len(s) > MAX_LINE_CHARS:
            s = s[:MAX_LINE_CHARS] + "…"
        if len(s) >= 3:
            out.append(s)
    return out


def _candidates(items: Sequence[Item]) -> tuple[list[Candidate], int, Counter[str]]:
    """Split items into categorized candidate lines; count events covered and their types."""
    cands: list[Candidate] = []
    kinds: Counter[str] = Counter()
    covered = 0
    saw_task = False
    for item in items:
        if item.type == "Summary":
            nested, count = _parse_summary(item)
            cands.extend(nested)
            covered += count
            kinds["earlier summary"] += 1
            saw_task = saw_task or any(c.kind == "task" for c in nested)
            continue
        covered += 1
        kinds[item.type] += 1
        sentences = _sentences(item.text)
        if not sentences:
            continue
        label = f"{item.name}: " if item.name else ""
        if item.type in ("Task", "Input"):
            cands.append(Candidate("task", " ".join(sentences), item.seq))
            saw_task = True
        elif item.is_error or item.type == "Error":
            cands.append(Candidate("error", f"[#{item.seq}] {label}{' '.join(sentences[:2])}", item.seq))
        elif item.type in ("ToolResult", "StepResult", "PythonOutput"):
            cands.append(Candidate("tool", f"[#{item.seq}] {label}{sentences[0]}", item.seq))
            cands.extend(Candidate("point", s, item.seq) for s in sentences[1:])
        elif item.type == "ToolCall":
            # The call itself says little; its name is counted, its result carries the outcome.
            continue
        else:
            if not saw_task and item.role in ("user", "") and item.type in ("Message", "Feedback"):
                cands.append(Candidate("task", " ".join(sentences), item.seq))
                saw_task = True
                continue
            for s in sentences:
                kind = "decision" if DECISION.search(s) else "point"
                cands.append(Candidate(kind, s, item.seq))
    return cands, covered, kinds


def _parse_summary(item: Item) -> tuple[list[Candidate], int]:
    """Read an earlier extractive summary back into candidates; other text becomes points."""
    lines = [line.strip() for line in item.text.splitlines() if line.strip()]
    match = NESTED_HEADER.match(lines[0]) if lines else None
    if match is None:
        return [Candidate("point", s, item.seq, 0.0) for s in _sentences(item.text)], 1
    out: list[Candidate] = []
    kind = "point"
    for line in lines[1:]:
        if line.startswith("Task: "):
            out.append(Candidate("task", line[len("Task: "):], item.seq))
        elif line.endswith(":") and line[:-1] in TITLE_TO_KIND:
            kind = TITLE_TO_KIND[line[:-1]]
        elif line.startswith("- "):
            out.append(Candidate(kind, line[2:], item.seq))
        elif line.startswith("Left out:"):
            continue
    return out, int(match.group(1))


def _tokens(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def _rank(cands: list[Candidate]) -> None:
    """TF-IDF informativeness, length-normalised, with a mild preference for later events."""
    words = [set(_tokens(c.text)) for c in cands]
    df: Counter[str] = Counter()
    for ws in words:
        df.update(ws)
    n = max(len(cands), 1)
    seqs = [c.seq for c in cands]
    lo, hi = (min(seqs), max(seqs)) if seqs else (0, 0)
    for cand, ws in zip(cands, words, strict=True):
        if not ws:
            cand.score = 0.0
            continue
        idf = sum(math.log(1 + n / df[w]) for w in ws)
        specific = sum(1 for w in ws if any(ch.isdigit() or ch in "._/" for ch in w))
        recency = (cand.seq - lo) / (hi - lo) if hi > lo else 1.0
        cand.score = idf / math.sqrt(len(ws) + 4) + 0.3 * specific + 0.5 * recency


QUOTAS = (("task", 0.25), ("error", 0.2), ("decision", 0.25), ("tool", 0.15), ("point", 1.0))


def _priority(c: Candidate) -> int:
    return {"task": 5, "error": 4, "decision": 3, "tool": 2, "point": 1}[c.kind]


def _order(kind: str, cands: list[Candidate]) -> list[Candidate]:
    pool = [c for c in cands if c.kind == kind]
    if kind == "task":
        # The first task sets the goal; the latest one says where it stands now.
        return pool[:1] + pool[-1:] if len(pool) > 1 else pool
    if kind in ("decision", "error", "tool"):
        return sorted(pool, key=lambda c: (-c.seq, -c.score))  # the final word first
    return sorted(pool, key=lambda c: (-c.score, c.seq))


def _choose(cands: list[Candidate], header: str, max_tokens: int) -> list[Candidate]:
    """Greedy fill: each section up to its quota first, then whatever room is left."""
    room = max_tokens - count_tokens(header) - 40  # the sections' titles and the left-out line
    line_cap = max(24, max_tokens // 6)
    chosen: list[Candidate] = []
    seen: list[tuple[set[str], Candidate]] = []
    ordered = {kind: _order(kind, cands) for kind, _ in QUOTAS}
    taken: set[int] = set()

    def take(cand: Candidate, budget: int) -> int | None:
        """Tokens used, 0 when it does not fit now, None when it must never be taken."""
        ws = set(_tokens(cand.text))
        if ws:
            for kept_words, kept in seen:
                if len(ws & kept_words) / len(ws | kept_words) > 0.6:
                    kept.similar += 1  # a near-duplicate of a line already kept: count it
                    return None
        cand.text = clip(cand.text, line_cap)
        cost = count_tokens(cand.text) + 3
        if cost > budget:
            return 0
        chosen.append(cand)
        seen.append((ws, cand))
        return cost

    for second_pass in (False, True):
        for kind, share in QUOTAS:
            budget = room if second_pass else min(room, int(max_tokens * share))
            misfits = 0
            for cand in ordered[kind]:
                if budget <= 3 or misfits > 50:  # full: stop scanning a long tail of misfits
                    break
                if id(cand) in taken:
                    continue
                used = take(cand, budget)
                if used is None or used:
                    taken.add(id(cand))
                misfits = 0 if used else misfits + 1
                used = used or 0
                budget -= used
                room -= used
    return chosen


def _header(covered: int, kinds: Counter[str], first: int, last: int) -> str:
    listing = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"Summary of {covered} event{'' if covered == 1 else 's'} (#{first}–#{last}): {listing}."


def _render(header: str, chosen: list[Candidate], cands: list[Candidate]) -> str:
    lines = [header]
    by_kind: dict[str, list[Candidate]] = {}
    for cand in sorted(chosen, key=lambda c: c.seq):  # chronological inside a section
        by_kind.setdefault(cand.kind, []).append(cand)
    for task in by_kind.get("task", []):
        lines.append(f"Task: {task.text}")
    for kind, title in SECTION_TITLES.items():
        if by_kind.get(kind):
            lines.append(f"{title}:")
            lines.extend(f"- {c.text}" + (f" (+{c.similar} similar)" if c.similar else "")
                         for c in by_kind[kind])
    left = Counter(c.kind for c in cands) - Counter(c.kind for c in chosen)
    if left:
        parts = ", ".join(f"{left[kind]} {label}" for kind, label in LEFT_OUT.items() if left[kind])
        lines.append(f"Left out: {parts}.")
    return "\n".join(lines)
