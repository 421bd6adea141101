"""The storage boundary of agent text (contextstore.fields): any valid string round-trips, U+0000
and the escape's own symbols included, and a search term is found where it was."""

from django.db import connection
from hypothesis import given
from hypothesis import strategies as st

from contextstore.fields import text_from_stored, text_to_stored
from contextstore.models import Event, Memory
from contextstore.services.events import event_append

# Any valid string (UTF-8 leaves out lone surrogates), with NUL, ␀ and ␛ drawn often.
texts = st.text(st.characters(codec="utf-8") | st.sampled_from("\x00\u2400\u241b"))


@given(text=texts)
def test_any_string_round_trips_through_the_storage_form(text):
    stored = text_to_stored(text)
    assert "\x00" not in stored
    assert text_from_stored(stored) == text


@given(text=texts, start=st.integers(0, 20), length=st.integers(1, 20))
def test_a_part_of_a_string_is_a_part_of_its_storage_form(text, start, length):
    """What a search (LIKE over the stored text, the term escaped alike) relies on."""
    part = text[start:start + length]
    assert text_to_stored(part) in text_to_stored(text)


def test_the_storage_form_is_readable_and_keeps_ordinary_text_as_it_is():
    assert text_to_stored("ls\x00-la ␀ ␛") == "ls␀-la ␛␀ ␛␛"
    assert text_to_stored("plain 😀 text") == "plain 😀 text"
    assert text_from_stored("an escape before another letter ␛x") == "an escape before another letter ␛x"


@given(text=texts)
def test_any_string_is_stored_and_read_back_on_this_database(thread, actor, text):
    event = event_append(thread=thread, events=[{"type": "Message", "content": text, "parts": [text],
                                                 "data": {text: text}}], actor=actor).events[0]
    memory = Memory.objects.create(workspace=thread.workspace, content=text)
    read = Event.objects.get(pk=event.pk)
    assert (read.content, read.parts, read.data) == (text, [text], {text: text})
    assert Memory.objects.get(pk=memory.pk).content == text
    with connection.cursor() as cursor:
        cursor.execute("SELECT content FROM contextstore_event WHERE id = %s", [event.pk])
        assert cursor.fetchone()[0] == text_to_stored(text)
    if text:
        assert Event.objects.filter(pk=event.pk, content__contains=text[len(text) // 2:]).exists()
        assert Event.objects.filter(pk=event.pk, content__startswith=text[:3]).exists()
