"""Run the memory tests, as a publish runs them, and record each result as an Event of its test:

    python manage.py run_memory_tests                          # every active test, on the published version
    python manage.py run_memory_tests --scope acme/billing-api --version 4
    python manage.py run_memory_tests --draft                  # on the version a publish would make now

One line per test; the command fails (exit status 1) when any test fails, so a deployment script can stop on it.
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from curation.rules.access import clean_scope
from curation.services.memory_test_runs import run_memory_tests

ACTOR_LABEL = "manage.py run_memory_tests"


class Command(BaseCommand):
    help = "Run the active memory tests on a published version or the draft; exit 1 when any fails."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version N` names the memory version here; it replaces Django's --version (print and exit).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--scope", default="", help="only the tests asked at this scope or below it")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--version", type=int, dest="number", help="a version number (default: the published one)")
        which.add_argument("--draft", action="store_true", help="the version a publish of every change would make")

    def handle(self, *args, scope, number, draft, **options):
        try:
            scope = clean_scope(scope.rstrip("/")) if scope.strip() else ""
            results = run_memory_tests(actor_label=ACTOR_LABEL, scope=scope, version=number, draft=draft)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        for r in results:
            verdict = "passed" if r.passed else "FAILED"
            where = f"version {r.version}" if r.version is not None else "the draft"
            line = f"{verdict}  #{r.test.pk} {r.test.name} ({r.test.scope}, on {where}, {r.tokens} tokens)"
            self.stdout.write(line + ("" if r.passed else ": " + "; ".join(r.failures)))
        failed = sum(1 for r in results if not r.passed)
        summary = f"{len(results) - failed} passed, {failed} failed."
        if failed:
            raise CommandError(summary, returncode=1)
        self.stdout.write(summary if results else "No active memory test" + (f" under {scope}." if scope else "."))
