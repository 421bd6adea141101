from django.apps import AppConfig


class ContextstoreConfig(AppConfig):
    name = "contextstore"
    verbose_name = "contextstore"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.backends.signals import connection_created

        from contextstore import (
            checks,  # noqa: F401 - registers the system checks
            tasks,  # noqa: F401 - registers the tasks services send by name
            tokens,
        )

        tokens.set_encoding(settings.TOKEN_ENCODING)

        from contextstore.db import install_sqlite_regexp

        connection_created.connect(install_sqlite_regexp, dispatch_uid="contextstore-regexp")

        # A request or task starts with no workspace named: the storage boundary redacts with
        # the built-in rules until one is (redaction.use_workspace), never with the rules a
        # previous request of this thread named.
        from celery.signals import task_prerun
        from django.core.signals import request_started

        request_started.connect(_reset_redaction, dispatch_uid="contextstore-redaction-scope")
        task_prerun.connect(_reset_redaction, dispatch_uid="contextstore-redaction-scope-task")

        from axes.signals import user_locked_out

        from contextstore.services.logins import login_locked_out

        user_locked_out.connect(lambda sender, **kwargs: login_locked_out(**kwargs), weak=False,
                                dispatch_uid="contextstore-login-locked-out")


def _reset_redaction(**kwargs: object) -> None:
    from contextstore.redaction import scope_reset

    scope_reset()
