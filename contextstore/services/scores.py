"""Scores on a session or on one of its LLM calls (thread + the call's seq), as Langfuse keeps
them: numeric (a finite number), categorical (a non-empty string), boolean (true/false). A
person gives them on the session page, an evaluator or agent through the API with its token.
Each is audited; a bad value is refused with a clear message and nothing is written."""

from typing import Any

from django.db import transaction

from contextstore.annotationspec import score_value
from contextstore.models import Score, Session, Thread
from contextstore.selectors.calls import CALL_END, CALL_START, llm_call_at
from contextstore.services.comments import event_target
from contextstore.services.common import Actor, audit


def score_add(*, session: Session, name: Any, data_type: Any, value: Any, actor: Actor,
              comment: Any = "", thread: Thread | None = None, seq: int | None = None) -> Score:
    """Store a score its door checked (annotationspec.check_score)."""
    number, text = score_value(data_type, value)
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
