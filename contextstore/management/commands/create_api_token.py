from django.core.management.base import BaseCommand, CommandError

from contextstore.errors import DomainError
from contextstore.services.common import Actor
from contextstore.services.workspaces import api_token_create, workspace_ensure
from contextstore.workspacespec import check_slug


class Command(BaseCommand):
    help = "Create an API token (creating the workspace if missing); prints the token last."

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--scope", choices=["read", "write", "admin"], default="write")

    def handle(self, *args, workspace: str, name: str, scope: str, **options):
        try:
            ws, created = workspace_ensure(slug=check_slug(workspace))
            token, raw = api_token_create(workspace=ws, name=name, scope=scope,
                                          actor=Actor.system("create_api_token"))
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        if created:
            self.stderr.write(f"created workspace {ws.slug}")
        self.stderr.write(f"token {token.prefix}… ({scope}) for workspace {ws.slug}; shown once:")
        self.stdout.write(raw)
