"""The secrets corpus of the redaction tests: well-known secret formats in varied positions
(prose, JSON strings, code blocks, URLs, tool arguments), near-misses that must stay as they
are, and `rows_holding`: every row of every table, read by SQL, that holds a text.

The fake secrets are built from pieces so that this file itself holds none a scanner flags."""

import json

from django.db import connection


def _alnum(n: int, seed: str = "A1b2C3d4E5f6G7h8I9j0K") -> str:
    return (seed * (n // len(seed) + 1))[:n]


# (kind, secret): the text that must go, whatever surrounds it.
SECRETS: list[tuple[str, str]] = [
    ("openai_key", "sk-" + _alnum(48)),
    ("openai_key", "sk-proj-" + _alnum(60, "Zx9_Qw8-Er7Ty6Ui5") + "T3BlbkFJ" + _alnum(20)),
    ("openai_key", "sk-svcacct-" + _alnum(64, "Mn4Op5-Qr6St7_Uv8")),
    ("anthropic_key", "sk-ant-api03-" + _alnum(86, "x9Y8z7W6_v5U4-t3S2") + "-AA"),
    ("anthropic_key", "sk-ant-admin01-" + _alnum(80, "Hh7Gg6Ff5Ee4Dd3")),
    ("aws_access_key_id", "AKIA" + "Z7Q4RM2K9XW3PL5N"),
    ("aws_access_key_id", "ASIA" + "Y3NV8QK2ZP4LR7TD"),
    ("github_token", "ghp_" + _alnum(36, "aB3dE5fG7hJ9kL1mN")),
    ("github_token", "gho_" + _alnum(36, "Qq2Ww3Ee4Rr5Tt6")),
    ("github_token", "github_pat_11ABCDEFG0" + _alnum(72, "zY_xW9vU8tS7")),
    ("gitlab_token", "glpat-" + _alnum(20, "Kk8Jj7-Hh6Gg5Ff4")),
    ("slack_token", "xoxb-" + "2837461029-4857362910-" + _alnum(24, "aQ1sW2dE3")),
    ("stripe_key", "sk_" + "live_" + _alnum(24, "4eC39HqLyjWDarjtT1zdp7dc")),
    ("google_api_key", "AIza" + _alnum(35, "SyD-9tSrke72PouQMnMX7")),
    ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFubiJ9"
     + "." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("private_key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + _alnum(64, "q8Zr+/Lm3") +
     "\n" + _alnum(64, "Xw7/Ty+u2") + "\n-----END RSA PRIVATE KEY-----"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" +
     _alnum(40, "Bg9+Hn8/") + "\n-----END OPENSSH PRIVATE KEY-----"),
]
# Secrets that only mean one where they stand: (kind, text around, the secret inside).
IN_CONTEXT: list[tuple[str, str, str]] = [
    ("url_password", "postgres://admin:{}@db.internal:5432/app", "S3cr3t-P4ss-" + _alnum(8)),
    ("url_password", "redis://:{}@cache:6379/0", "p4ssw0rd9Zq" + _alnum(6)),
    ("url_password", "clone https://deploy:{}@git.example.com/org/repo.git now", "gl-" + _alnum(16)),
    ("bearer_token", "curl -H 'Authorization: Bearer {}' https://api.example.com", _alnum(40, "Tk9.Lm8~")),
    ("bearer_token", '{{"headers": {{"authorization": "bearer {}"}}}}', _alnum(32, "zZ9yY8xX7")),
    ("aws_secret_access_key", "aws_secret_access_key = {}\nregion = eu-west-1",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKE1"),
    ("aws_secret_access_key", 'AWS_SECRET_ACCESS_KEY="{}"', "Zk3/Pq8+" + _alnum(32, "mN7bV6cX5")),
]


def _prose(s: str) -> str:
    return f"Here is the key you asked for: {s} - keep it safe."


def _json(s: str) -> str:
    return json.dumps({"config": {"name": "prod", "credential": s, "retries": 3}})


def _code(s: str) -> str:
    return f"```bash\nexport API_KEY={s}\ncurl https://api.example.com/v1/models\n```"


def _url(s: str) -> str:
    return f"GET https://api.example.com/v1/items?api_key={s}&page=2"


POSITIONS = {"prose": _prose, "json": _json, "code": _code}


def corpus() -> list[tuple[str, str, str]]:
    """(kind, text, secret): every secret in every position (a PEM key is not put in a URL),
    and the secrets that stand in their context."""
    cases = []
    for kind, secret in SECRETS:
        for wrap in POSITIONS.values():
            cases.append((kind, wrap(secret), secret))
        if kind != "private_key":
            cases.append((kind, _url(secret), secret))
    for kind, around, secret in IN_CONTEXT:
        cases.append((kind, around.format(secret), secret))
    return cases


NEAR_MISSES: list[str] = [
    "Keys start with the sk- prefix; never paste one here.",
    "a risk-free plan", "the task-runner-configuration-2024 file", "mask-rcnn-resnet50-fpn-coco-2020",
    "sk-learn-style-pipeline-configuration", "sk-12", "my-key-sk-2024", "kubectl get pods -n sk-system",
    "C:\\Users\\bob\\sk-notes.txt", "skeleton", "skimage.io.imread", "desk-lamp",
    "deadbeef", "0x7fffffff", "1937c82", "f6a39d3b4c2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a",
    "550e8400-e29b-41d4-a716-446655440000",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "SHA256: 9f86d081884c7d659a2feaea0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0",
    "https://example.com/path?q=1", "https://user@example.com/repo.git", "http://localhost:8000/api/v1/",
    "ssh://git@github.com:22/org/repo", "postgres://db.internal:5432/app", "https://example.com/a:b@c",
    "ftp://ftp.example.com/pub/file.txt", "http://[::1]:8080/", "mailto:alice@example.com",
    "alice@example.com", "https://example.com/reset?user=bob",
    "the AKIA prefix", "AKIAshort", "AKIAIOSFODNN7EXAMP", "eyJhbGciOiJIUzI1NiJ9", "eyJ.eyJ.x",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0B\n-----END CERTIFICATE-----",
    "ghp_", "ghp_short123", "xoxb", "glpat-short", "AIzaShort",
    "Send a Bearer token in the Authorization header.", "authorization: bearer <token>",
    "aws_secret_access_key = <YOUR_SECRET_HERE>", "sk_test", "the rk_live prefix",
    "call_abc123", "toolu_01A09q90qw90lq917835lq9", "docker run -e OPENAI_API_KEY=$OPENAI_API_KEY img",
    "1234-5678-9012-3456",
]


def _as_text(value: object) -> str:
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode(errors="replace")
    if isinstance(value, (dict, list)):  # a JSON column decoded by the driver
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def rows_holding(text: str) -> list[tuple[str, tuple]]:
    """(table, row) of every row in the database whose columns hold `text` (each of its lines
    of 8 characters or more: a JSON column keeps a newline escaped), read by plain SQL."""
    pieces = [line for line in text.splitlines() if len(line) >= 8] or [text]
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if not table.startswith("contextstore_"):
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                values = [_as_text(v) for v in row if v is not None]
                if any(piece in v for piece in pieces for v in values):
                    found.append((table, row))
    return found
