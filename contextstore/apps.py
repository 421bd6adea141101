from django.apps import AppConfig


class ContextstoreConfig(AppConfig):
    name = "contextstore"
    verbose_name = "contextstore"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from contextstore.services.events import install_sqlite_regexp

        connection_created.connect(install_sqlite_regexp, dispatch_uid="contextstore-regexp")
