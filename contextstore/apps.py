from django.apps import AppConfig


class ContextstoreConfig(AppConfig):
    name = "contextstore"
    verbose_name = "contextstore"
