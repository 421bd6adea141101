"""Scores on a session or on one of its LLM calls (thread + the call's seq), as Langfuse keeps
them: numeric (a finite number), categorical (a non-empty string), boolean (true/false). A
person gives them on the session page, an evaluator or agent through the API with its token.
Each is audited; a bad value is refused with a clear message and nothing is written."""

import math
import re
from typing import Any

from django.db import transaction

from contextstore.errors import InvalidInput
from contextstore.models import Score, Session, Thread
from contextstore.selectors.calls import CALL_END, CALL_START, llm_call_at
from contextstore.services.comments import MAX_TEXT, event_target
from contextstore.services.common import Actor, audit

NAME = re.compile(r"[^:\x00]{1,100}")  # ':' would be ambiguous in the list's score filter


def _value(data_type: Any, value: Any) -> tuple[float | None, str]:
    """(value, string_value) as stored, or InvalidInput saying what the type takes."""
    if data_type == Score.DataType.NUMERIC:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput("A numeric score's value must be a number.",
                               details={"value": "number"})
        if not math.isfinite(value):
            raise InvalidInput("A numeric score's value must be finite (not NaN or infinity).",
                               details={"value": "finite number"})
        return float(value), ""
    if data_type == Score.DataType.BOOLEAN:
        if not isinstance(value, bool):
            raise InvalidInput("A boolean score's value must be true or false.",
                               details={"value": "true or false"})
        return float(value), "true" if value else "false"
    if data_type == Score.DataType.CATEGORICAL:
        if not isinstance(value, str) or not value.strip() or len(value) > 200 or "\x00" in value:
            raise InvalidInput("A categorical score's value must be a non-empty string "
                               "(at most 200 characters).", details={"value": "non-empty string"})
        return None, value.strip()
    raise InvalidInput("data_type must be numeric, categorical or boolean.",
                       details={"data_type": "numeric, categorical or boolean"})


def score_add(*, session: Session, name: Any, data_type: Any, value: Any, actor: Actor,
              comment: Any = "", thread: Thread | None = None, seq: int | None = None) -> Score:
    if not isinstance(name, str) or not NAME.fullmatch(name.strip()):
        raise InvalidInput("name is required: at most 100 characters, without ':'.",
                           details={"name": "1 to 100 characters, no ':'"})
    number, text = _value(data_type, value)
    if not isinstance(comment, str) or len(comment) > MAX_TEXT or "\x00" in comment:
        raise InvalidInput(f"comment must be a string of at most {MAX_TEXT} characters.",
                           details={"comment": "string"})
    thread, seq = event_target(session=session, thread=thread, seq=seq, types=(CALL_START, CALL_END))
    if thread is not None and seq is not None:  # a call is named by its start's seq, as its card
        call = llm_call_at(thread=thread, seq=seq)
        seq = call.seq if call else seq
    with transaction.atomic():
        score = Score.objects.create(
            workspace_id=session.workspace_id, session=session, thread=thread, seq=seq,
            name=name.strip(), data_type=data_type, value=number, string_value=text,
            comment=comment.strip(), author_user=actor.user, author_token=actor.token,
            author_label=actor.label[:200])
        audit(actor=actor, action="score.add", target=score, workspace=session.workspace,
              session=session.pk, thread=thread.pk if thread else None, seq=seq,
              name=score.name, data_type=data_type)
    return score
