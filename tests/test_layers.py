"""The layer rules (pyproject's [tool.importlinter]) and the Django-free modules they promise."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_tokens_client_and_summarizers_work_without_django_settings():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    code = (
        "import sys\n"
        "import contextstore_client, contextstore.summarizers.openai, contextstore.summarizers.extractive\n"
        "from contextstore.tokens import count_tokens\n"
        "assert count_tokens('hello world') == 2, count_tokens('hello world')\n"
        "assert 'django' not in sys.modules, 'django was imported'\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
