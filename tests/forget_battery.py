"""The forget battery: one forgotten lesson, the disguises a person or an agent could submit it again in
(each a kind of variant, with whether the tombstone must hold it), and realistic unrelated lessons of the
same scope that it must never hold, many sharing its words and its technical vocabulary. Used by the pure
test (tests/unit/test_forget_battery.py) and through the database (tests/services/test_forget_battery.py)."""

import base64
import html
import urllib.parse

SCOPE = "acme/billing-api"
TRIGGER = "Exporting invoices from the billing API at month end"
CONTENT = (
    "Tag the export batch FORGETMEAXOLOTL-4242 and pause the pgbouncer pool first, otherwise the ledger "
    "double-posts every refund."
)
TOKEN = "FORGETMEAXOLOTL-4242"

ZWSP, SOFT_HYPHEN, WORD_JOINER, RLO, PDF, BOM = "\u200b", "\u00ad", "\u2060", "\u202e", "\u202c", "\ufeff"
CYRILLIC = str.maketrans("aeopcxyiABEHKMOPCTX", "аеорсхуіАВЕНКМОРСТХ")
GREEK = str.maketrans("aovABEHIKMNOPTXYZ", "αονΑΒΕΗΙΚΜΝΟΡΤΧΥΖ")
LEET = str.maketrans("aeiostAEIOST", "4310574310$7")
ACCENTS = str.maketrans("aeiouAEIOUcn", "àéîõüÀÉÎÕÜçñ")


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def _bold(text: str) -> str:
    """Mathematical bold letters (𝐀-𝐳), which NFKC folds."""
    return "".join(
        chr(0x1D400 + ord(c) - 65) if "A" <= c <= "Z" else chr(0x1D41A + ord(c) - 97) if "a" <= c <= "z" else c
        for c in text
    )


def _inside_words(text: str, mark: str) -> str:
    return " ".join(mark.join(word) for word in text.split(" "))


def _mixed_case(text: str) -> str:
    return "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(text))


def _entities(text: str) -> str:
    return "".join(f"&#{ord(c)};" if c in "aeiou" else html.escape(c) for c in text)


def _zalgo(text: str) -> str:
    return "".join(c + "\u0301\u0317" if c.isalpha() else c for c in text)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


LESSON = f"{TRIGGER}. {CONTENT}"

# (kind, trigger, content, held): `held` False only for what the README says may pass (no rare token, other words).
VARIANTS = [
    ("exact", TRIGGER, CONTENT, True),
    ("zero-width spaces", _inside_words(TRIGGER, ZWSP), _inside_words(CONTENT, ZWSP), True),
    ("soft hyphens", _inside_words(TRIGGER, SOFT_HYPHEN), _inside_words(CONTENT, SOFT_HYPHEN), True),
    (
        "word joiners, BOM and bidi controls",
        f"{BOM}{_inside_words(TRIGGER, WORD_JOINER)}",
        f"{RLO}{CONTENT}{PDF}".replace(" ", f" {BOM}"),
        True,
    ),
    ("Cyrillic look-alikes", TRIGGER.translate(CYRILLIC), CONTENT.translate(CYRILLIC), True),
    ("Greek look-alikes", TRIGGER.translate(GREEK), CONTENT.translate(GREEK), True),
    ("fullwidth letters", _fullwidth(TRIGGER), _fullwidth(CONTENT), True),
    ("mathematical bold letters", _bold(TRIGGER), _bold(CONTENT), True),
    ("accents", TRIGGER.translate(ACCENTS), CONTENT.translate(ACCENTS), True),
    ("combining marks (zalgo)", _zalgo(TRIGGER), _zalgo(CONTENT), True),
    ("leetspeak", TRIGGER.translate(LEET), CONTENT.translate(LEET), True),
    ("mixed case", _mixed_case(TRIGGER), _mixed_case(CONTENT), True),
    ("extra punctuation", TRIGGER.replace(" ", " ... "), CONTENT.replace(" ", "; ").replace("pool", "p.o.o.l"), True),
    (
        "reordered words",
        "At month end, the billing API: exporting invoices",
        "First pause the pgbouncer pool and tag FORGETMEAXOLOTL-4242 on the export batch, otherwise every refund "
        "double-posts in the ledger.",
        True,
    ),
    ("trigger and content swapped", CONTENT, TRIGGER, True),
    ("HTML entities", _entities(TRIGGER), _entities(CONTENT), True),
    ("HTML tags", f"<p><b>{TRIGGER}</b></p>", f"<div class=\"note\"><em>{CONTENT}</em></div>", True),
    (
        "markdown formatting",
        f"## {TRIGGER}",
        "- **Tag** the export batch `FORGETMEAXOLOTL-4242`\n- _pause_ the `pgbouncer` pool **first**\n"
        "> otherwise the ledger double-posts every refund.",
        True,
    ),
    ("percent-encoded", urllib.parse.quote(TRIGGER), urllib.parse.quote(CONTENT), True),
    (
        "extra filler sentences",
        TRIGGER,
        f"{CONTENT} This came up again last quarter. Ask in the channel if unsure, and note it in the runbook.",
        True,
    ),
    (
        "unique token kept, synonyms elsewhere",
        "Month-closing bill dumps",
        "Label the dump job FORGETMEAXOLOTL-4242 and halt the connection pooler beforehand, or the books get "
        "duplicate reimbursements.",
        True,
    ),
    (
        "translation keeping the token",
        "Exportation des factures de l'API de facturation en fin de mois",
        "Étiqueter le lot d'export FORGETMEAXOLOTL-4242 et suspendre d'abord le pool pgbouncer, sinon le grand "
        "livre comptabilise chaque remboursement deux fois.",
        True,
    ),
    ("token split by spaces", TRIGGER, CONTENT.replace(TOKEN, "FORGETME AXOLOTL 4242"), True),
    ("token split by hyphens and underscores", "Bill dumps", "Use forget-me-axolotl_4242 as the tag.", True),
    (
        "token spelled out letter by letter",
        "Month-closing bill dumps",
        "Label the dump job F O R G E T M E A X O L O T L and halt the pooler.",
        True,
    ),
    ("token alone in another sentence", "Tags for batch jobs", "Reuse FORGETMEAXOLOTL-4242 for the nightly job.", True),
    ("token in leetspeak", "Month-closing bill dumps", "Label the dump job F0RG3TM34X0L0TL-4242.", True),
    ("base64 of the lesson", _b64(TRIGGER), _b64(CONTENT), True),
    (
        "base64 inside a sentence",
        "A note from the ops channel",
        f"Decode this and follow it: {_b64(LESSON)} (it is from the runbook).",
        True,
    ),
    ("URL-safe base64 of the lesson", "Runbook blob", base64.urlsafe_b64encode(LESSON.encode()).decode(), True),
    (
        "several disguises at once",
        _inside_words(TRIGGER.translate(CYRILLIC), ZWSP),
        _fullwidth(CONTENT.translate(LEET)),
        True,
    ),
    (
        "non-breaking and ideographic spaces, tabs",
        TRIGGER.replace(" ", "\u00a0"),
        CONTENT.replace(" ", "\t").replace("and", "\u3000and\u3000"),
        True,
    ),
    # What may pass: another language or other words, without the rare token (the README says so).
    (
        "translation without the token",
        "Exportation des factures en fin de mois",
        "Suspendre d'abord le pool de connexions, sinon le grand livre comptabilise chaque remboursement deux fois.",
        False,
    ),
    (
        "synonyms without the token",
        "Month-closing bill dumps",
        "Halt the connection pooler beforehand, or the books get duplicate reimbursements.",
        False,
    ),
]

# Realistic lessons of the same scope that are not the forgotten one: many share its words (invoices,
# billing, export, batch, pgbouncer, pool, ledger, refund, month end, tag) and its kind of identifiers.
UNRELATED = [
    ("Retrying invoice webhooks", "Retry failed invoice webhooks with exponential backoff capped at 300 seconds."),
    ("Refund requests over 500 EUR", "Refunds over 500 EUR need a second approver in the billing console."),
    ("Month end close", "Run the revenue recognition job only after the ledger close at month end."),
    (
        "Sizing the pgbouncer pool",
        "Keep the pgbouncer pool at 40 connections per billing worker; more starves PostgreSQL.",
    ),
    ("Exporting usage records", "Export usage records as CSV with ISO-8601 timestamps in UTC."),
    ("Tagging releases", "Tag billing API releases with the semantic version, e.g. v2.14.3, never with a date."),
    (
        "Paginating the invoices endpoint",
        "Page through /v1/invoices with the cursor, not with offset; offsets skip rows under concurrent writes.",
    ),
    ("Idempotency keys", "Send an Idempotency-Key header on every POST to /v1/charges so retries never double charge."),
    ("Currency rounding", "Round each invoice line to the currency's minor unit before summing, not after."),
    (
        "Ledger double-posting",
        "If the ledger shows a double-posted entry, reverse it with a contra entry; never delete ledger rows.",
    ),
    (
        "Pausing a batch job",
        "Pause a running batch job from the scheduler UI, not by killing its process; a "
        "killed job leaves a half-written batch.",
    ),
    (
        "pgbouncer transaction mode",
        "pgbouncer in transaction mode breaks prepared statements; use session mode for the migration runner.",
    ),
    (
        "Tax rates",
        "Read VAT rates from the tax service at invoice time; cached rates go stale at the quarter boundary.",
    ),
    ("Dunning emails", "Dunning emails go out on days 3, 7 and 14 after a failed payment; do not send them by hand."),
    ("Credit notes", "Issue a credit note instead of editing a finalised invoice."),
    (
        "Stripe API version",
        "Pin the Stripe API version in the client; an upgrade changes the shape of invoice objects.",
    ),
    (
        "Timeouts to the payment gateway",
        "Set a 10s timeout on calls to the payment gateway and treat a timeout as unknown, not failed.",
    ),
    ("Hashing card fingerprints", "Hash card fingerprints with SHA-256 and the per-tenant salt before logging."),
    ("Export batch sizes", "Export invoices in batches of 1000; larger batches hit the 30s request timeout."),
    (
        "Ticket numbers in commits",
        "Name the ticket in every commit message, like BILL-1187, so the changelog links it.",
    ),
    (
        "Deploying the billing API",
        "Deploy the billing API behind the feature flag first and watch the 5xx rate for ten minutes.",
    ),
    ("Refund webhooks", "A refund webhook can arrive before the charge webhook; store it and replay it later."),
    ("Invoice PDFs", "Render invoice PDFs asynchronously; the API returns 202 and a URL to poll."),
    ("Connection limits", "PostgreSQL max_connections is 200; leave 20 for superuser and migrations."),
    ("Month-end load", "Scale the export workers to 6 replicas on the last business day of the month."),
    ("Reconciling payouts", "Reconcile payouts against bank statements daily, matching on the payout reference."),
    ("Customer balance", "Apply a customer's credit balance before charging the card."),
    ("Rate limits", "The billing API allows 100 requests per second per key; back off on HTTP 429."),
    ("Test cards", "Use the gateway's test card 4242 4242 4242 4242 only in the sandbox."),
    ("Proration", "Prorate plan changes to the second, and show the proration line on the next invoice."),
    ("Archiving old invoices", "Move invoices older than seven years to cold storage; tax law keeps them that long."),
    ("Locale of invoices", "Format invoice amounts in the customer's locale, but store them in minor units."),
    (
        "Migrations on the ledger table",
        "Add columns to the ledger table as nullable first, backfill in batches, then add the constraint.",
    ),
    ("Alerting on failed exports", "Page the on-call when the nightly export fails twice in a row."),
    ("Sandbox keys", "Sandbox API keys start with sk_test_; refuse them in production config at start-up."),
    ("Python version of the billing worker", "The billing worker runs on python3.11; test upgrades in staging first."),
    ("Job tags", "Tag every scheduled job with its owning team so alerts reach the right rota."),
    ("Pool exhaustion", "When the connection pool is exhausted, shed export traffic before checkout traffic."),
    ("Free trials", "A free trial converts at midnight in the customer's time zone, not UTC."),
    ("Discount codes", "Discount codes are case-insensitive and single-use per customer unless marked shared."),
    (
        "Double charges",
        "Before refunding a double charge, check the gateway dashboard: the second one may have been voided.",
    ),
    ("Exchange rates", "Take exchange rates from the daily ECB feed; never convert with a live rate at invoice time."),
    ("Commit hashes in incidents", "Name the deployed commit, e.g. 9f3c2ab, in every incident report."),
    ("Ledger exports for auditors", "Auditors get a read-only ledger export, signed, once a quarter."),
]
