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

        from axes.signals import user_locked_out

        from contextstore.services.logins import login_locked_out

        user_locked_out.connect(lambda sender, **kwargs: login_locked_out(**kwargs), weak=False,
                                dispatch_uid="contextstore-login-locked-out")
