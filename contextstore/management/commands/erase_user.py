import getpass
import json

from django.core.management.base import BaseCommand, CommandError

from contextstore.errors import DomainError
from contextstore.models import Workspace
from contextstore.services.common import Actor
from contextstore.services.erasure import user_erase
from contextstore.sessionspec import check_user_id


class Command(BaseCommand):
    help = ("Erase a person of a workspace (GDPR Article 17): their sessions and everything "
            "derived from them. Prints the receipt (JSON); running it again finds nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--user-id", required=True, dest="user_id",
                            help="the person's user id, as their sessions carry it")

    def handle(self, *args, workspace: str, user_id: str, **options):
        ws = Workspace.objects.filter(slug=workspace).first()
        if ws is None:
            raise CommandError(f"No workspace {workspace!r}.")
        # The audit row's actor: who ran the command, as far as the machine knows.
        try:
            who = getpass.getuser()
        except (OSError, KeyError):  # no login name (a container's numeric user)
            who = "unknown"
        actor = Actor.system(f"erase_user ({who})")
        try:
            receipt = user_erase(workspace=ws, user_id=check_user_id(user_id), actor=actor)
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(receipt, indent=2))
