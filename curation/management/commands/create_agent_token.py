"""`manage.py create_agent_token NAME --scope acme/billing --scope acme/web [--expires 30d]`"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.services.tokens import create_agent_token, parse_duration


class Command(BaseCommand):
    help = "Create an agent API token and print its secret once (only a hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            dest="scopes",
            help="A scope prefix the token may read and write; repeat for several.",
        )
        parser.add_argument("--expires", default=None, help="Lifetime such as 30d, 12h or 90m (default: none).")

    def handle(self, *args, name, scopes, expires, **options):
        try:
            token, key = create_agent_token(
                name=name, scopes=scopes, expires_in=parse_duration(expires) if expires else None
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{f}: {' '.join(m)}" for f, m in exc.message_dict.items())) from None
        expiry = f"expires {token.expires_at:%Y-%m-%d %H:%M} UTC" if token.expires_at else "does not expire"
        self.stderr.write(
            f"Token {token.name!r} for {', '.join(token.scopes)}; {expiry}. It is shown once; store it now."
        )
        self.stdout.write(key)
