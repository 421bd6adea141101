"""Template source checks: Django's `{# #}` comment is one line only; a comment spread over
lines is shown to the reader as text."""

from pathlib import Path

import pytest

TEMPLATES = sorted((Path(__file__).resolve().parents[2] / "templates").rglob("*.html"))


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_comments_close_on_their_line(path):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "{#" in line:
            assert "#}" in line[line.index("{#"):], f"{path.name}:{number} opens a comment it does not close"
