"""A short soak of the embedded default: scripts/soak-embedded for 60 s (its own SQLite database
in a temporary folder, `manage.py serve`, OTLP exports and appends, the worker SIGKILLed twice)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_a_short_soak_loses_no_trace_and_no_summary_across_two_worker_kills():
    result = subprocess.run([sys.executable, "scripts/soak-embedded", "--seconds", "60", "--kills", "2"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    figures = dict(re.findall(r"^(\S.*?)\s{2,}(.+)$", result.stdout, re.MULTILINE))
    assert int(figures["exports sent"]) > 0 and figures["exports refused"] == "0"
    assert figures["traces underived"] == "0" and figures["traces derived"] == figures["traces stored"]
    assert int(figures["summary jobs done"]) > 0 and figures["summary jobs not done"] == "0"
    assert figures["restarts seen"] == "2" and figures["processes left running"] == "[]"
    assert result.stdout.rstrip().endswith("ok")
