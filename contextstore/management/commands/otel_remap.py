from django.core.management.base import BaseCommand, CommandError

from contextstore.models import Workspace
from contextstore.services.common import Actor
from contextstore.services.otlp.derive import sessions_remap


class Command(BaseCommand):
    help = ("Derive OpenTelemetry traces again from their kept spans (after the span mapping "
            "changed): sessions holding only derived events are written anew.")

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--trace", action="append", dest="traces", metavar="TRACE_ID",
                            help="only this trace (hex id); repeatable")

    def handle(self, *args, workspace: str, traces: list[str] | None, **options):
        ws = Workspace.objects.filter(slug=workspace).first()
        if ws is None:
            raise CommandError(f"No workspace {workspace!r}.")
        done = sessions_remap(workspace=ws, actor=Actor.system("otel_remap"),
                              trace_ids=[t.lower() for t in traces] if traces else None)
        self.stdout.write(f"{done['traces']} traces derived, {done['sessions_rebuilt']} sessions rebuilt")
