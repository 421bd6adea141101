"""gunicorn settings from the environment: `gunicorn --config project/gunicorn.py project.wsgi`.

Plain os.environ (not project.settings): gunicorn loads this file in the master before Django
is set up, and the master never needs Django's settings.
"""

import logging
import os

from gunicorn.glogging import Logger


def _int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _cpus() -> int:
    # The CPUs this process may run on (a cpuset or taskset narrows it), where the platform
    # says; a CPU quota (docker --cpus) is not visible here: set GUNICORN_WORKERS then.
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# One process per CPU; threads overlap the database round trips that dominate a request.
workers = _int("GUNICORN_WORKERS", _cpus())
threads = _int("GUNICORN_THREADS", 4)
worker_class = "gthread" if threads > 1 else "sync"
timeout = _int("GUNICORN_TIMEOUT", 60)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = _int("GUNICORN_KEEPALIVE", 5)
# Recycle workers now and then so a slow leak cannot grow without bound; jitter keeps them
# from restarting together.
max_requests = _int("GUNICORN_MAX_REQUESTS", 2000)
max_requests_jitter = _int("GUNICORN_MAX_REQUESTS_JITTER", 200)
# The proxy in front sets X-Forwarded-Proto; gunicorn only passes it on from these addresses.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# Django's request-id middleware writes one structured access line per request, so gunicorn's
# own access log stays off unless asked for.
access_log = _bool("GUNICORN_ACCESS_LOG", False)
accesslog = "-" if access_log else None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "INFO").lower()


class QuietAccessLogger(Logger):
    """gunicorn's logger, minus the access record its logger would drop: setting logconfig_dict
    (below) switches gunicorn's access records on, and building one (every header and environ
    variable) cost ~2 % of a worker's CPU on a one-event append."""

    @property
    def access_log_enabled(self) -> bool:
        return super().access_log_enabled and self.access_log.isEnabledFor(logging.INFO)


logger_class = QuietAccessLogger

# gunicorn's own lines (boot, worker exits, timeouts) in the same shape as Django's (see LOGGING
# in project/settings.py), so a log collector parses one format.
_json = os.environ.get("LOG_FORMAT", "text" if _bool("DEBUG", True) else "json") == "json"
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "generic": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        } if _json else {"format": "%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s"},
    },
    "handlers": {
        "stdout": {"class": "logging.StreamHandler", "formatter": "generic",
                   "stream": "ext://sys.stdout"},
    },
    "root": {"level": loglevel.upper(), "handlers": ["stdout"]},
    "loggers": {
        "gunicorn.error": {"level": loglevel.upper(), "handlers": ["stdout"], "propagate": False},
        # Setting logconfig_dict switches gunicorn's access records on; WARNING drops them.
        "gunicorn.access": {"level": "INFO" if access_log else "WARNING", "handlers": ["stdout"],
                            "propagate": False},
    },
}
# Heartbeat files on tmpfs: a container's overlay filesystem can stall them into timeouts.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None
# The control socket defaults to a file in $HOME, which a read-only non-root image lacks.
control_socket_disable = True
