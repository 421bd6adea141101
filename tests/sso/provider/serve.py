"""Run the test provider: migrate its SQLite file, create its users and the dashboard's client,
then serve on 127.0.0.1:<port>.

    python -m tests.sso.provider.serve <port> <setup.json>

setup.json: {"client_id", "client_secret", "redirect_uri",
             "users": [{"username", "password", "email", "groups": [...]}]}
"""

import json
import os
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "tests.sso.provider.settings"

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from oauth2_provider.models import Application  # noqa: E402


def main(port: str, setup_path: str) -> None:
    with open(setup_path) as f:
        setup = json.load(f)
    call_command("migrate", verbosity=0)
    for spec in setup["users"]:
        user = User.objects.create_user(spec["username"], spec["email"], spec["password"])
        for name in spec["groups"]:
            user.groups.add(Group.objects.get_or_create(name=name)[0])
    Application.objects.create(
        name="contextstore", client_id=setup["client_id"], client_secret=setup["client_secret"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=setup["redirect_uri"], algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, skip_checks=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
