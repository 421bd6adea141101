"""The deployment files cannot drift from the code: docker/Dockerfile, docker/compose.yml and
docker/.env.example are parsed and held against what project/ actually reads; the production
settings pass `manage.py check --deploy`; the probes and request ids behave."""

import ast
import json
import logging
import logging.config
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from contextstore.views import health
from project.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent
DOCKER = ROOT / "docker"
APP_SERVICES = ("migrate", "web", "worker", "beat")
ENV_LINE = re.compile(r"^(#?)([A-Z][A-Z0-9_]*)=(.*)$")
# Helpers in project/ that read one environment variable, named by their first argument:
# settings' env_str/env_int/env_bool/env_list/env_json/..., gunicorn.py's _int/_bool.
ENV_READER = re.compile(r"^(env_\w+|_int|_bool|_str)$")


# --- parsing helpers -----------------------------------------------------------------------

def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined and comments dropped."""
    instructions, pending = [], ""
    for line in (DOCKER / "Dockerfile").read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        keyword, _, args = pending.strip().partition(" ")
        instructions.append((keyword.upper(), " ".join(args.split())))
        pending = ""
    return instructions


def stages() -> list[list[tuple[str, str]]]:
    """Instructions grouped by build stage (each starts at a FROM)."""
    result: list[list[tuple[str, str]]] = []
    for keyword, args in dockerfile_instructions():
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, args))
    return result


def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


def env_example() -> list[tuple[str, str, bool, str]]:
    """(name, value, set?, comment above) for every entry of docker/.env.example."""
    entries, comment = [], ""
    for line in (DOCKER / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line)
        if match:
            entries.append((match[2], match[3], not match[1], comment))
            comment = ""
        elif line.startswith("# ") and not line.startswith("# ---"):
            comment = f"{comment} {line[2:]}".strip()
        else:
            comment = ""
    return entries


def env_names_read_by(path: Path) -> set[str]:
    """Names of environment variables a module under project/ reads."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            if isinstance(func, ast.Name) and ENV_READER.match(func.id):
                names.add(node.args[0].value)
            elif isinstance(func, ast.Attribute) and func.attr in {"get", "getenv"}:
                source = ast.unparse(func.value)
                if source in {"os.environ", "os"}:
                    names.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            if isinstance(node.slice, ast.Constant):
                names.add(node.slice.value)
    return names


def code_env_names() -> set[str]:
    return set().union(*(env_names_read_by(p) for p in sorted((ROOT / "project").glob("*.py"))))


def compose_interpolated_names() -> set[str]:
    return set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", (DOCKER / "compose.yml").read_text()))


def production_env(tmp_path: Path) -> dict[str, str]:
    """The environment a production container gets: docker/.env.example with a real secret."""
    env = {k: v for k, v in os.environ.items()
           if k not in code_env_names() and not k.startswith("DJANGO_")}
    env.update({name: value for name, value, active, _ in env_example() if active})
    env.update({"SECRET_KEY": secrets.token_urlsafe(50), "CONTEXTSTORE_VAR_DIR": str(tmp_path),
                "DJANGO_SETTINGS_MODULE": "project.settings"})
    return env


# --- Dockerfile ----------------------------------------------------------------------------

def test_the_image_builds_in_stages_from_a_slim_python_that_satisfies_the_project():
    all_stages = stages()
    assert len(all_stages) >= 2, "dependencies build in one stage, the runtime is another"
    args = dict(a.split("=", 1) for k, a in dockerfile_instructions() if k == "ARG" and "=" in a)
    bases = [stage[0][1].split()[0].replace("${PYTHON_IMAGE}", args.get("PYTHON_IMAGE", ""))
             for stage in all_stages]
    assert all("slim" in base for base in bases), bases
    version = re.search(r"python:(\d+)\.(\d+)", bases[-1])
    pyproject = (ROOT / "pyproject.toml").read_text()
    required = re.search(r'requires-python = ">=(\d+)\.(\d+)"', pyproject)
    assert version and required
    assert tuple(map(int, version.groups())) >= tuple(map(int, required.groups()))
    runtime = all_stages[-1]
    assert any(k == "COPY" and a.startswith("--from=") for k, a in runtime), "copies the venv"


def test_the_image_runs_as_a_non_root_user():
    users = [a for k, a in stages()[-1] if k == "USER"]
    assert users, "the runtime stage sets USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}


def test_the_image_collects_static_files_at_build_and_serves_with_gunicorn():
    runtime = stages()[-1]
    assert any(k == "RUN" and "manage.py collectstatic --noinput" in a for k, a in runtime)
    cmd = json.loads(next(a for k, a in reversed(runtime) if k == "CMD"))
    assert cmd[0] == "gunicorn"
    config = cmd[cmd.index("--config") + 1]
    assert (ROOT / config).is_file()
    assert cmd[-1] == settings.WSGI_APPLICATION.rsplit(".", 1)[0]


def test_the_image_copies_everything_settings_load_from_the_source_tree():
    copied = {a.split()[0].rstrip("/") for k, a in stages()[-1]
              if k == "COPY" and not a.startswith("--from=")}
    needed = {"manage.py", "project", "contextstore"}
    for folder in [*settings.STATICFILES_DIRS, *settings.TEMPLATES[0]["DIRS"]]:
        needed.add(str(Path(folder).relative_to(ROOT)))
    assert needed <= copied
    for source in copied:
        assert (ROOT / source).exists(), f"COPY {source}: no such path"


def test_the_build_context_lets_in_exactly_what_the_image_copies():
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line for line in lines if line and not line.startswith("#")]
    assert patterns[0] == "**", "everything is left out unless let in by name"
    let_in = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    sources = {a.split()[0].rstrip("/") for k, a in dockerfile_instructions()
               if k == "COPY" and not a.startswith("--from=")}
    # A file under a let-in folder (contextstore/__init__.py) is covered by that folder.
    uncovered = {src for src in sources if not any(src == p or src.startswith(f"{p}/")
                                                     for p in let_in)}
    assert not uncovered
    assert not let_in & {".env", "docker/.env", "var", ".venv", ".git"}


def test_every_builder_reads_the_one_root_dockerignore():
    # The classic builder ignores Dockerfile-specific ignore files (and would send docker/.env).
    assert not list(DOCKER.glob("*.dockerignore")) and (ROOT / ".dockerignore").is_file()
    patterns = (ROOT / ".dockerignore").read_text().splitlines()
    assert "docker/.env" in patterns and ".env" in patterns


def test_the_dockerfile_needs_no_frontend_image():
    # A `# syntax=` line makes BuildKit pull a frontend image the file does not need.
    first = (DOCKER / "Dockerfile").read_text().splitlines()[0]
    assert not re.match(r"#\s*syntax\s*=", first, re.I)


def test_the_dependency_layer_depends_on_pyproject_alone(tmp_path):
    """Only pyproject.toml is copied before the dependencies are installed, so editing anything
    else (the README, the code) does not reinstall them; what is installed is its pins."""
    build = stages()[0]
    install = next(i for i, (k, a) in enumerate(build) if k == "RUN" and "pip install" in a)
    copied = [a for k, a in build[:install] if k == "COPY"]
    assert copied == ["pyproject.toml ./"]
    # The step's own command lists the requirements, here from a copy of pyproject.toml.
    listing = build[install][1].split(" && ")[0]
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    subprocess.run(["sh", "-c", listing], cwd=tmp_path, env={"PATH": path}, check=True)
    with (ROOT / "pyproject.toml").open("rb") as f:
        pins = tomllib.load(f)["project"]["dependencies"]
    assert (tmp_path / "requirements.txt").read_text().split() == pins


def test_the_venv_the_image_copies_holds_no_installer_and_no_test_suites():
    """The build stage's last step (after the install, before the runtime copies /opt/venv)
    uninstalls pip, setuptools and wheel and deletes every installed package's tests/."""
    build = stages()[0]
    install = next(i for i, (k, a) in enumerate(build) if k == "RUN" and "pip install" in a)
    cleanup = build[-1]
    assert cleanup[0] == "RUN" and build.index(cleanup) > install
    assert "pip uninstall --yes --quiet pip setuptools wheel" in cleanup[1]
    assert "-name tests -exec rm -rf" in cleanup[1]
    runtime = stages()[-1]
    assert ("COPY", "--from=build /opt/venv /opt/venv") in runtime


def test_the_build_stage_cleanup_run_on_a_real_venv_keeps_the_packages_and_drops_the_rest(tmp_path):
    """The step itself, run on a fresh venv (with pip, as python -m venv makes it) holding a
    package with a test suite, a module named like one, and a top-level tests package."""
    venv = tmp_path / "opt" / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python3*/site-packages"))
    files = {"shop/__init__.py": "", "shop/tests/__init__.py": "", "shop/tests/test_cart.py": "",
             "shop/testing/__init__.py": "FIXTURE = 1", "shop/contests.py": "", "tests/__init__.py": ""}
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    assert (site / "pip").is_dir() and (venv / "bin" / "pip").exists()
    command = stages()[0][-1][1].replace("/opt/venv", str(venv))
    path = f"{venv / 'bin'}:{os.environ['PATH']}"
    subprocess.run(["sh", "-c", command], env={"PATH": path}, check=True, timeout=120)

    left = sorted(str(p.relative_to(site)) for p in site.rglob("*") if "__pycache__" not in p.parts)
    assert left == ["shop", "shop/__init__.py", "shop/contests.py", "shop/testing",
                    "shop/testing/__init__.py"]
    assert not list((venv / "bin").glob("pip*"))
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-c", "import shop.testing; assert shop.testing.FIXTURE == 1"], check=True)
    assert subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode != 0


def test_the_runtime_stage_removes_the_base_images_pip():
    runtime_runs = [a for k, a in stages()[-1] if k == "RUN"]
    assert any("/usr/local/bin/python -m pip uninstall --yes --quiet pip setuptools wheel" in a
               for a in runtime_runs)
    # ... before anything of the app is copied, so no later step can count on it
    instructions = stages()[-1]
    uninstall = next(i for i, (k, a) in enumerate(instructions) if k == "RUN" and "pip uninstall" in a)
    first_copy = next(i for i, (k, a) in enumerate(instructions) if k == "COPY")
    assert uninstall < first_copy


GLOB_TOKENS = {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def in_build_context(path: str) -> bool:
    """Whether .dockerignore lets `path` into the build context, the way Docker reads it: the
    last pattern that matches the path or a folder above it decides; `!` lets in."""
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    parts = path.split("/")
    candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    let_in = True
    for pattern in patterns:
        glob = pattern.removeprefix("!").rstrip("/")
        regex = "".join(GLOB_TOKENS.get(token, re.escape(token))
                        for token in re.split(r"(\*\*/|\*\*|\*|\?)", glob))
        if any(re.fullmatch(regex, candidate) for candidate in candidates):
            let_in = pattern.startswith("!")
    return let_in


def test_the_build_context_leaves_out_node_modules_docs_and_secrets():
    assert in_build_context("pyproject.toml") and in_build_context("static/js/app.js")
    assert in_build_context("contextstore/models/threads.py")
    for path in ("static/node_modules/axe-core/axe.min.js", "node_modules/axe-core/axe.min.js",
                 "static/vendor/node_modules/x.js", "README.md", "docs/api.md", "docker/.env",
                 ".env", "contextstore/__pycache__/models.cpython-312.pyc", "var/x.sqlite3"):
        assert not in_build_context(path), path


def test_the_build_context_holds_no_tests_docs_client_or_removed_modules():
    """What the repository would send as the build context: every tracked file .dockerignore
    lets in. Nothing of the test suites, docs, the client distribution or the removed re-export
    modules (contextstore/client.py, contextstore/adapters/) is in it; every COPY has files."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    context = [path for path in tracked if in_build_context(path)]
    assert context and "contextstore/models/__init__.py" in context
    for path in context:
        parts = path.split("/")
        assert parts[0] not in {"tests", "docs", "framework_tests", "clients", "scripts", "docker"}, path
        assert "tests" not in parts and not parts[-1].startswith("test_"), path
        assert not path.startswith(("contextstore/adapters/", "contextstore/client.py")), path
    for path in ("tests/conftest.py", "framework_tests/x.py", "contextstore/tests/test_x.py",
                 "contextstore/test_x.py", "static/js/tests/x.js"):
        assert not in_build_context(path), path
    sources = {a.split()[0].rstrip("/") for k, a in dockerfile_instructions()
               if k == "COPY" and not a.startswith("--from=")}
    for source in sources:
        assert any(p == source or p.startswith(f"{source}/") for p in context), source


def test_collectstatic_leaves_node_modules_out(tmp_path, settings):
    source, target = tmp_path / "static", tmp_path / "collected"
    for name in ("js/app.js", "node_modules/axe-core/axe.min.js", "js/node_modules/x/x.js"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text("x")
    settings.STATICFILES_DIRS = [source]
    settings.STATIC_ROOT = target
    call_command("collectstatic", "--noinput", verbosity=0)
    assert (target / "js" / "app.js").is_file()
    assert not list(target.rglob("node_modules"))
    # ... with the app still named as pytest-django's live server looks for it (the browser
    # tests get no JavaScript or CSS otherwise)
    assert "django.contrib.staticfiles" in settings.INSTALLED_APPS


def test_gunicorn_takes_its_settings_from_the_environment(monkeypatch):
    import runpy

    for name, value in {"GUNICORN_BIND": "127.0.0.1:9", "GUNICORN_WORKERS": "3",
                        "GUNICORN_THREADS": "8", "GUNICORN_TIMEOUT": "45", "DEBUG": "false",
                        "GUNICORN_ACCESS_LOG": ""}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LOG_FORMAT", raising=False)
    config = runpy.run_path(str(ROOT / "project" / "gunicorn.py"))
    assert (config["bind"], config["workers"], config["threads"], config["timeout"]) == (
        "127.0.0.1:9", 3, 8, 45)
    assert config["worker_class"] == "gthread"
    assert config["accesslog"] is None
    assert config["logconfig_dict"]["loggers"]["gunicorn.access"]["level"] == "WARNING"
    generic = config["logconfig_dict"]["formatters"]["generic"]
    assert generic["()"] == "pythonjsonlogger.json.JsonFormatter"
    monkeypatch.setenv("GUNICORN_THREADS", "1")
    assert runpy.run_path(str(ROOT / "project" / "gunicorn.py"))["worker_class"] == "sync"


GUNICORN_ACCESS_PROBE = """
import runpy
from gunicorn.config import Config
settings = runpy.run_path("project/gunicorn.py")
cfg = Config()
for name, value in settings.items():
    if name in cfg.settings:
        cfg.set(name, value)
log = cfg.logger_class(cfg)
built = []
log.atoms = lambda *args: built.append(args) or {}
log.access(None, None, {}, None)
print(log.access_log_enabled, len(built))
"""


@pytest.mark.parametrize("asked, expected", [("", "False 0"), ("true", "True 1")])
def test_gunicorn_builds_no_access_record_it_would_drop(asked, expected):
    # A fresh interpreter: building gunicorn's logger applies its logging config process-wide.
    env = {**os.environ, "GUNICORN_ACCESS_LOG": asked}
    out = subprocess.run([sys.executable, "-c", GUNICORN_ACCESS_PROBE], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == expected


# --- compose.yml ---------------------------------------------------------------------------

def test_compose_runs_web_worker_beat_postgres_redis_and_a_one_shot_migrate():
    services = compose()["services"]
    assert set(services) >= {"web", "worker", "beat", "postgres", "redis", "migrate"}
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    assert services["migrate"]["restart"] == "no"
    assert services["web"]["command"][0] == "gunicorn"
    assert services["worker"]["command"][:4] == ["celery", "--app", "project", "worker"]
    assert services["beat"]["command"][:5] == ["celery", "--app", "project", "--quiet", "beat"]
    assert services["beat"]["deploy"]["replicas"] == 1
    for name in APP_SERVICES:
        build = services[name]["build"]
        assert (DOCKER / build["context"]).resolve() == ROOT
        assert (ROOT / build["dockerfile"]).resolve() == DOCKER / "Dockerfile"


def test_only_web_is_published_and_only_on_loopback_for_the_proxy():
    services = compose()["services"]
    published = {name: spec["ports"] for name, spec in services.items() if "ports" in spec}
    assert list(published) == ["web"]
    assert all(port.startswith("127.0.0.1:") for port in published["web"])


def test_every_long_running_service_but_beat_has_a_health_check():
    services = compose()["services"]
    for name in ("web", "worker", "postgres", "redis"):
        check = services[name]["healthcheck"]
        assert check["test"][0] in {"CMD", "CMD-SHELL"} and check["interval"], name
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])


def test_the_worker_health_check_names_the_worker_without_relying_on_hostname_env():
    # podman does not set HOSTNAME for exec'd commands; `$$` keeps compose from interpolating.
    command = " ".join(compose()["services"]["worker"]["healthcheck"]["test"])
    assert "celery@$$(hostname)" in command and "HOSTNAME" not in command
    shell = command.split(" ", 1)[1].replace("$$", "$").replace("celery --app", "echo celery --app")
    result = subprocess.run(["sh", "-c", shell], env={"PATH": os.environ["PATH"]},
                            capture_output=True, text=True, timeout=10)
    assert f"celery@{socket.gethostname()} " in result.stdout


def test_compose_gives_the_app_its_database_without_building_a_url():
    app_env = compose()["services"]["web"]["environment"]
    assert "DATABASE_URL" not in app_env and app_env["POSTGRES_HOST"] == "postgres"


def test_a_password_with_url_reserved_characters_reaches_the_database_settings_intact(tmp_path):
    password = "p@ss/w:rd#?%41&="
    env = production_env(tmp_path) | {"POSTGRES_HOST": "postgres", "POSTGRES_PASSWORD": password}
    env.pop("DATABASE_URL", None)
    script = ("import json; from django.conf import settings as s; d = s.DATABASES['default']; "
              "print(json.dumps([d['ENGINE'], d['HOST'], d['PORT'], d['USER'], d['PASSWORD'], "
              "d['NAME'], d['OPTIONS']['connect_timeout']]))")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        "django.db.backends.postgresql", "postgres", "5432", "contextstore", password,
        "contextstore", 5]


def test_broker_and_cache_connections_have_connect_and_socket_timeouts(tmp_path):
    env = production_env(tmp_path) | {"CELERY_BROKER_URL": "redis://redis:6379/0",
                                      "CACHE_URL": "redis://redis:6379/1"}
    script = ("import json; from django.conf import settings as s; "
              "print(json.dumps([s.CELERY_BROKER_TRANSPORT_OPTIONS, s.CELERY_BROKER_CONNECTION_TIMEOUT, "
              "s.CACHES['default']['OPTIONS']]))")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    broker, connect, cache_options = json.loads(result.stdout.strip().splitlines()[-1])
    assert broker["socket_connect_timeout"] == 2 and broker["socket_timeout"] == 5
    assert connect == 2
    assert cache_options == {"socket_connect_timeout": 2, "socket_timeout": 2}


def test_celery_banner_and_shutdown_lines_are_json_too(tmp_path):
    """A real worker (filesystem broker) started and stopped with SIGTERM: with LOG_FORMAT=json
    every line on stdout, the banner and the shutdown notice included, is one JSON object."""
    env = production_env(tmp_path) | {"CELERY_BROKER_URL": "filesystem://", "LOG_FORMAT": "json",
                                      "CELERY_QUEUE": "deploy-json-test"}
    env.pop("DATABASE_URL", None)
    log = tmp_path / "worker.out"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "--app", "project", "worker", "--concurrency", "1",
             "--pool", "solo", "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while b" ready." not in log.read_bytes():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        proc.send_signal(15)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    messages = [line["message"] for line in lines]
    assert any("starting" in m and "[queues]" in m for m in messages), messages
    assert "worker: Warm shutdown (MainProcess)" in messages
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)


def beat_command() -> list[str]:
    """compose's beat command, run by this interpreter."""
    command = compose()["services"]["beat"]["command"]
    assert command[0] == "celery"
    return [sys.executable, "-m", "celery", *command[1:]]


def compose_environment(service: str) -> dict[str, str]:
    """A service's `environment:` as compose passes it with nothing set in the shell or .env:
    `${NAME:-default}` is the default."""
    return {name: re.sub(r"\$\{[A-Z][A-Z0-9_]*:-([^}]*)\}", r"\1", str(value))
            for name, value in compose()["services"][service]["environment"].items()}


def beat_env(tmp_path: Path) -> dict[str, str]:
    """compose's app environment; the broker refuses at once (beat sends nothing this soon)."""
    env = production_env(tmp_path) | compose_environment("beat") | {
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0", "LOG_FORMAT": "json"}
    env.pop("DATABASE_URL", None)
    return env


def test_a_beat_that_cannot_write_its_schedule_logs_its_crash_as_one_record(tmp_path):
    """A schedule file beat cannot create (here under a regular file): beat logs the crash as
    one CRITICAL record, traceback included, and exits 1. Python used to print the traceback
    again into beat's redirected stderr, one log record per fragment (~1,200 lines)."""
    (tmp_path / "file").write_text("")
    command = beat_command()
    command[command.index("--schedule") + 1] = str(tmp_path / "file" / "celerybeat-schedule")
    result = subprocess.run(command, cwd=ROOT, env=beat_env(tmp_path), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    [crash] = [record for record in records if record["level"] == "CRITICAL"]
    assert crash["logger"] == "celery.beat" and "NotADirectoryError" in crash["exc_info"]
    assert not [record for record in records if record["logger"] == "celery.redirected"]
    assert len(records) <= 4, [record["message"] for record in records]
    assert "Traceback" not in result.stderr


def read_only_root(tmpfs: list[str]) -> list[str]:
    """A command line's start that runs it the way compose runs a `read_only: true` service: in
    a user and mount namespace of its own, / is read-only and each of `tmpfs` a new empty tmpfs.
    The host's mounts are untouched (a namespace's remounts are its own)."""
    steps = ["mount -o remount,bind,ro /"]
    steps += [f"mount -t tmpfs tmpfs {shlex.quote(path)}" for path in tmpfs]
    return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
            " && ".join([*steps, 'exec "$@"']), "sh"]


def test_beat_runs_on_a_read_only_root_with_its_schedule_on_tmpfs(tmp_path):
    beat = compose()["services"]["beat"]
    assert beat["read_only"] is True
    schedule = Path(beat["command"][beat["command"].index("--schedule") + 1])
    assert any(schedule.is_relative_to(mount) for mount in beat["tmpfs"])
    if shutil.which("unshare") is None or subprocess.run(
            read_only_root([]) + ["true"], capture_output=True).returncode != 0:
        pytest.skip("no user and mount namespaces here to make / read-only in")
    hidden = [path for path in (ROOT, Path(sys.executable).parent) for mount in beat["tmpfs"]
              if path.is_relative_to(mount)]
    if hidden:  # a checkout under /tmp: compose's empty tmpfs would hide the code beat runs
        pytest.skip(f"{hidden[0]} lies under a tmpfs that compose mounts empty")
    log = tmp_path / "beat.out"
    with log.open("wb") as out:
        proc = subprocess.Popen([*read_only_root(beat["tmpfs"]), *beat_command()], cwd=ROOT,
                                env=beat_env(tmp_path), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        # The schedule file, seen through beat's own view of the filesystem.
        written = Path(f"/proc/{proc.pid}/root") / schedule.relative_to("/")
        deadline = time.monotonic() + 60
        while not list(written.parent.glob(f"{written.name}*")):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        time.sleep(1)
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["message"] for r in records if r["level"] in {"WARNING", "ERROR", "CRITICAL"}] == []
    assert "beat: Starting..." in [r["message"] for r in records]


def test_web_and_worker_get_time_to_finish_their_work_when_stopped():
    import runpy

    services = compose()["services"]
    graceful = runpy.run_path(str(ROOT / "project" / "gunicorn.py"))["graceful_timeout"]
    assert int(services["web"]["stop_grace_period"].rstrip("s")) > graceful
    assert int(services["worker"]["stop_grace_period"].rstrip("s")) >= 60


def test_app_services_wait_for_migrations_and_healthy_backing_services():
    services = compose()["services"]
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"] == {"condition": "service_completed_successfully"}, name
        assert depends["redis"] == {"condition": "service_healthy"}, name
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}


def test_data_lives_in_named_volumes():
    spec = compose()
    declared = set(spec["volumes"])
    for name, target in (("postgres", "/var/lib/postgresql/data"), ("redis", "/data")):
        mounts = [m.split(":") for m in spec["services"][name]["volumes"]]
        assert any(src in declared and dst == target for src, dst in mounts), name


def test_compose_gives_the_app_only_variables_the_code_reads():
    services = compose()["services"]
    read = code_env_names()
    for name in APP_SERVICES:
        assert services[name]["env_file"] == ".env"
        assert set(services[name]["environment"]) <= read, name


# --- .env.example --------------------------------------------------------------------------

def test_env_example_lists_every_variable_the_code_reads():
    listed = {name for name, *_ in env_example()}
    missing = code_env_names() - listed
    assert not missing, f"add to docker/.env.example (with a comment): {sorted(missing)}"


def test_env_example_lists_nothing_that_neither_code_nor_compose_uses():
    listed = {name for name, *_ in env_example()}
    unused = listed - code_env_names() - compose_interpolated_names()
    assert not unused, f"not read anywhere: {sorted(unused)}"
    assert compose_interpolated_names() <= listed


def test_every_env_example_entry_is_listed_once_with_a_comment():
    entries = env_example()
    names = [name for name, *_ in entries]
    assert len(names) == len(set(names))
    assert [name for name, _, _, comment in entries if not comment] == []


def test_the_docs_document_every_setting():
    page = (ROOT / "docs" / "configuration.md").read_text()
    table = page[page.index("## Every setting"):].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`|, `([A-Z][A-Z0-9_]*)`", table, re.M))
    names = {name for pair in documented for name in pair if name}
    missing = (code_env_names() | compose_interpolated_names()) - names
    assert not missing, f"add to docs/configuration.md's 'Every setting' table: {sorted(missing)}"


# --- production settings -------------------------------------------------------------------

def test_check_deploy_passes_with_the_production_env(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_env(tmp_path), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_env_turns_on_hashed_static_files_json_logs_and_database_timeouts(tmp_path):
    env = production_env(tmp_path) | {"DATABASE_URL": "postgres://u:p@db.internal:5432/cs"}
    script = (
        "import json; from django.conf import settings as s; db = s.DATABASES['default']; "
        "print(json.dumps({'storage': s.STORAGES['staticfiles']['BACKEND'], "
        "'formatter': s.LOGGING['handlers']['console']['formatter'], "
        "'proxy': s.SECURE_PROXY_SSL_HEADER, 'cookies': [s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE], 'hsts': s.SECURE_HSTS_SECONDS, 'age': db['CONN_MAX_AGE'], "
        "'health': db['CONN_HEALTH_CHECKS'], 'options': db['OPTIONS']}))"
    )
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "storage": "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "formatter": "json",
        "proxy": ["HTTP_X_FORWARDED_PROTO", "https"],
        "cookies": [True, True],
        "hsts": 31_536_000,
        "age": 60,
        "health": True,
        "options": {"options": "-c statement_timeout=30000", "connect_timeout": 5,
                    "tcp_user_timeout": 60_000, "keepalives": 1, "keepalives_idle": 30,
                    "keepalives_interval": 10, "keepalives_count": 3, "prepare_threshold": 1},
    }


def test_behind_pgbouncer_no_session_state_is_configured(tmp_path):
    """DATABASE_POOLER=pgbouncer: no server-side cursors, no prepared statements, and no
    statement_timeout startup option (PgBouncer refuses it; the role carries it)."""
    env = production_env(tmp_path) | {"DATABASE_URL": "postgres://u:p@pgbouncer:6432/cs",
                                       "DATABASE_POOLER": "pgbouncer"}
    script = ("import json; from django.conf import settings as s; db = s.DATABASES['default']; "
              "print(json.dumps({'cursors': db['DISABLE_SERVER_SIDE_CURSORS'], "
              "'options': db['OPTIONS']}))")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "cursors": True,
        "options": {"connect_timeout": 5, "tcp_user_timeout": 60_000, "keepalives": 1,
                    "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3,
                    "prepare_threshold": None},
    }
    env["DATABASE_POOLER"] = "pgpool"
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "DATABASE_POOLER must be empty or 'pgbouncer', not 'pgpool'" in result.stderr


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path):
    env = production_env(tmp_path) | {"SECRET_KEY": ""}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


# --- probes --------------------------------------------------------------------------------

@pytest.fixture
def broker_at(monkeypatch):
    """Point the Celery app at another broker URL for one test. Celery reads the
    CELERY_BROKER_URL environment variable before its configuration (CI sets it), so both.

    The configuration is restored key by key afterwards: reading broker_write_url to save it
    would pin today's fallback value and leak it into later tests."""
    keys = ("broker_url", "broker_write_url")
    saved = {key: celery_app.conf.changes[key] for key in keys if key in celery_app.conf.changes}

    def point(url: str) -> None:
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        monkeypatch.delenv("CELERY_BROKER_WRITE_URL", raising=False)
        celery_app.conf.update(broker_url=url, broker_write_url=None)

    yield point
    for key in keys:
        celery_app.conf.changes.pop(key, None)
    celery_app.conf.update(saved)


@pytest.fixture
def fresh_migration_check(monkeypatch):
    """Each test sees the migration check run for real, not this process's cached answer."""
    monkeypatch.setattr(health, "_migrations_seen_applied", False)


def test_healthz_answers_without_auth_when_the_database_is_up(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok"}}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_checks_database_broker_and_migrations(client, db, fresh_migration_check):
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "status": "ok", "checks": {"database": "ok", "broker": "ok", "migrations": "ok",
                                   "otlp_derivation": "ok, 0 traces waiting, oldest 0 s"},
    }


def test_readyz_is_503_when_the_broker_is_unreachable(client, db, broker_at):
    # Port 1 on loopback refuses at once: a broker that is down, without waiting for a timeout.
    broker_at("redis://127.0.0.1:1/0")
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("error: ")
    assert "127.0.0.1" not in body["checks"]["broker"]  # no hosts or URLs to anonymous callers


def test_readyz_gives_up_on_a_broker_that_accepts_but_never_answers(client, db, broker_at):
    with socket.socket() as silent:  # the kernel accepts connections; nobody ever replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        broker_at(f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        started = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - started
    assert response.status_code == 503
    assert response.json()["checks"]["broker"].startswith("error: ")
    assert elapsed < health.BROKER_TIMEOUT_SECONDS * 3


@pytest.mark.parametrize("host", ["10.42.0.17:8000", "127.0.0.1", "[fd00::5]:8000"])
def test_probes_answer_whatever_the_host_header_while_pages_keep_the_host_check(db, settings, host):
    settings.ALLOWED_HOSTS = ["contextstore.example.com", "localhost"]  # as docker/.env.example
    client = Client()
    assert client.get("/healthz", headers={"Host": host}).status_code == 200
    assert client.get("/readyz", headers={"Host": host}).status_code == 200
    assert client.post("/healthz", headers={"Host": host}).status_code == 405
    assert client.get("/accounts/login/", headers={"Host": host}).status_code == 400
    assert client.get("/accounts/login/", headers={"Host": "contextstore.example.com"}).status_code == 200


def test_readyz_checks_no_worker_heartbeat_unless_a_limit_is_set(client, db, settings):
    settings.WORKER_HEARTBEAT_MAX_AGE = 0
    assert "worker" not in client.get("/readyz").json()["checks"]


def test_readyz_is_503_naming_the_worker_until_a_worker_writes_its_heartbeat(client, db, settings):
    settings.WORKER_HEARTBEAT_MAX_AGE = 60
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"] == "error: no worker has written a heartbeat yet"


def test_readyz_is_ready_with_a_recent_heartbeat_and_503_once_it_is_older_than_the_limit(
        client, db, settings):
    from contextstore.models import WorkerHeartbeat
    from contextstore.services.workers import worker_heartbeat

    settings.WORKER_HEARTBEAT_MAX_AGE = 60
    worker_heartbeat(hostname="celery@old", pid=7)
    worker_heartbeat(hostname="celery@node", pid=8)

    def last_seen(old: int, newest: int) -> None:
        now = timezone.now()
        WorkerHeartbeat.objects.filter(hostname="celery@old").update(seen_at=now - timedelta(seconds=old))
        WorkerHeartbeat.objects.filter(hostname="celery@node").update(seen_at=now - timedelta(seconds=newest))

    last_seen(old=50, newest=10)  # the newest worker's counts
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["worker"] == "ok, heartbeat 10 s ago"
    last_seen(old=115, newest=75)
    stale = client.get("/readyz")
    assert stale.status_code == 503
    assert stale.json()["checks"]["worker"] == "error: no worker heartbeat for 75 s (limit 60 s)"
    assert stale["Retry-After"]


def test_a_heartbeat_forgets_workers_gone_for_a_day(db):
    from contextstore.models import WorkerHeartbeat
    from contextstore.services.workers import worker_heartbeat

    worker_heartbeat(hostname="celery@replaced", pid=7)
    WorkerHeartbeat.objects.update(seen_at=timezone.now() - timedelta(days=1, seconds=1))
    worker_heartbeat(hostname="celery@node", pid=8)
    worker_heartbeat(hostname="celery@node", pid=9)
    assert list(WorkerHeartbeat.objects.values_list("hostname", "pid")) == [("celery@node", 9)]


def test_probes_take_only_get(client, db):
    assert client.post("/healthz").status_code == 405


def test_probes_stay_on_plain_http_when_everything_else_redirects_to_https(db, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    client = Client()  # built after the override: SecurityMiddleware reads settings once
    assert client.get("/healthz").status_code == 200
    redirect = client.get("/accounts/login/")
    assert redirect.status_code == 301
    assert redirect["Location"].startswith("https://")


# --- request ids ---------------------------------------------------------------------------

def test_every_response_carries_a_fresh_request_id(client, db):
    first, second = client.get("/healthz"), client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", first["X-Request-ID"])
    assert first["X-Request-ID"] != second["X-Request-ID"]


def test_a_request_id_from_the_proxy_is_kept_and_a_malformed_one_replaced(client, db):
    kept = client.get("/healthz", headers={"X-Request-ID": "lb-1234.abc"})
    assert kept["X-Request-ID"] == "lb-1234.abc"
    for bad in ("has spaces", "x" * 129, "new\nline"):
        replaced = client.get("/healthz", headers={"X-Request-ID": bad})
        assert re.fullmatch(r"[0-9a-f]{32}", replaced["X-Request-ID"]), bad


class Collect(logging.Handler):
    """A handler built from the production LOGGING config's request-id filter and JSON format."""

    def __init__(self) -> None:
        super().__init__()
        configurator = logging.config.DictConfigurator(settings.LOGGING)
        self.addFilter(configurator.configure_filter(settings.LOGGING["filters"]["request_id"]))
        self.setFormatter(configurator.configure_formatter(settings.LOGGING["formatters"]["json"]))
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_log_lines_written_during_a_request_are_json_with_its_request_id(client, db, broker_at):
    broker_at("redis://127.0.0.1:1/0")  # a failing check, so the view logs a line too
    handler = Collect()
    root, access_logger = logging.getLogger(), logging.getLogger("contextstore.request")
    levels = root.level, access_logger.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)  # setLevel, not an attribute: it clears the loggers' caches
    access_logger.setLevel(logging.INFO)
    try:
        response = client.get("/readyz", headers={"X-Request-ID": "trace-me-42"})
    finally:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        access_logger.setLevel(levels[1])
    assert response["X-Request-ID"] == "trace-me-42"
    by_logger = {line["logger"]: line for line in handler.lines}
    warning = by_logger["contextstore.views.health"]
    assert (warning["level"], warning["request_id"]) == ("WARNING", "trace-me-42")
    access = by_logger["contextstore.request"]
    assert access["request_id"] == "trace-me-42"
    assert (access["method"], access["path"], access["status"]) == ("GET", "/readyz", 503)
    assert access["message"] == "GET /readyz 503" and access["duration_ms"] >= 0
