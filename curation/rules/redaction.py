"""Find secrets and personal data in submitted text and redact them before anything is stored.

detect-secrets finds credentials (its plugins, with their entropy limits); our own patterns add
private keys, bearer tokens, e-mail addresses and phone numbers. A finding never carries the raw
value: only its kind and the field it was in, so flags, events and logs cannot leak it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from detect_secrets.core.scan import _scan_line
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.settings import default_settings, get_plugins
from detect_secrets.util.code_snippet import get_code_snippet

from curation.rules import prefilter

_VALUE_END = r"[^\s'\".,;:!?)\]}>]"  # a value's last character: never the sentence's punctuation after it
# Credentials, found before any personal-data pattern runs: a phone or card pattern must never cut a token
# (a Slack token's digit groups look like a phone number) and leave its other parts behind.
_CREDENTIALS: tuple[tuple[str, re.Pattern], ...] = (
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S)),
    ("bearer token", re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9\-._~+/]{16,}=*)")),
    ("basic auth", re.compile(r"(?i)\bauthorization\s*[:=]\s*basic\s+(?P<value>[A-Za-z0-9+/]{4,}={0,2})")),
    # "password: x", "api_key=x", and in prose: "the admin password is x", "the password for prod was x"
    (
        "password",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd|secret|api[_-]?key|token|passwort|kennwort)\b"
            r"(?:\s+(?:for|of|on|to|f\u00fcr|von)\s+(?:the\s+|den\s+|das\s+|die\s+)?[\w.-]+)?"
            r"(?:\s*[:=]\s*|\s+(?:is|was|are|were|reads|=|ist|lautet|war)\s+)['\"]?"
            rf"(?P<value>[^\s'\"]{{4,}}{_VALUE_END})"
        ),
    ),
    # "pw: x" is short enough to be a word elsewhere: only with a colon or an equals sign
    ("password", re.compile(rf"(?i)\bpw\s*[:=]\s*['\"]?(?P<value>[^\s'\"]{{4,}}{_VALUE_END})")),
    # "log in as root with Tr0ub4dor&3", "ssh as deploy using x": a user name, then what logs it in
    (
        "password",
        re.compile(
            r"(?i)\b(?:log(?:ged)?\s*in(?:to)?|sign(?:ed)?\s*in|ssh|connect(?:ed)?|authenticate)\s+"
            r"(?:as|with\s+user)\s+[\w.@-]+\s+(?:with(?:\s+password)?|using|password)\s+['\"]?"
            rf"(?P<value>[^\s'\"]{{6,}}{_VALUE_END})"
        ),
    ),
    # "the credentials are deploy / x", "credentials: admin:x"
    (
        "password",
        re.compile(
            r"(?i)\bcredentials?\s*(?:are|is|were|was|:)\s*['\"]?[\w.@-]+\s*(?:/|:|,)\s*['\"]?"
            rf"(?P<value>[^\s'\"]{{4,}}{_VALUE_END})"
        ),
    ),
    # An AWS key split by a line break or zero-width characters is still one key (a whole one is
    # detect-secrets' to find, under the same name).
    (
        "aws access key",
        re.compile(
            r"(?<![A-Z0-9])(?:AKIA|ASIA)(?:(?:[\u200b\u2060\ufeff]|[ \t]*\r?\n[ \t]*)*[A-Z0-9]){16}(?![A-Z0-9])"
        ),
    ),
    ("API key", re.compile(r"(?<![\w-])sk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}")),
    ("npm token", re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36}(?!\w)")),
    ("credential in URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<value>[^\s@/]+)@")),
)
# Personal data, most specific first: a card or an IBAN is never left half taken by the phone pattern.
_PERSONAL: tuple[tuple[str, re.Pattern], ...] = (
    ("e-mail address", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    # Spelled out against scrapers: "jane [at] example [dot] com", or "jane dot doe at example dot com" (a
    # plain "at" only after a dotted name: "looked at example dot com" is prose).
    (
        "e-mail address",
        re.compile(
            r"(?i)\b[a-z0-9_%+-]+(?:\s*[\[(]dot[\])]\s*[a-z0-9_%+-]+|\s+dot\s+[a-z0-9_%+-]+)*\s*[\[(]at[\])]\s*"
            r"[a-z0-9-]+(?:\s*(?:[\[(]dot[\])]|\s+dot\s+)\s*[a-z0-9-]+)+\b"
            r"|\b[a-z0-9_%+-]+(?:\s+dot\s+[a-z0-9_%+-]+)+\s+at\s+[a-z0-9-]+(?:\s+dot\s+[a-z0-9-]+)*"
            r"\s+dot\s+(?:com|org|net|io|dev|ai|app|co|uk|de|fr|eu|edu|gov|info|me)\b"
        ),
    ),
    ("IBAN", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")),
    ("card number", re.compile(r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?!\w|[.,-]\d|-\w)")),
    ("US social security number", re.compile(r"(?<![\w.-])\d{3}-\d{2}-\d{4}(?!\w|[.-]\d)")),
    # A full stop or comma after the number ends the sentence; one followed by a digit is part of it, and
    # a hyphen followed by a letter or digit makes it part of an identifier (a UUID's digit groups), as
    # for card numbers above.
    ("phone number", re.compile(r"(?<![\w.+-])\+?\d[\d ().-]{7,}\d(?!\w|[.,-]?\d|-\w)")),
)
_MIN_PHONE_DIGITS = 9
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
_TOKEN_EDGES = ".,;:!?()[]{}<>'\"`"
# Entropy plugins flag ordinary words and identifiers in prose; credentials keep their own plugins.
_SKIPPED_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString"}
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
# The keyword plugin is most of the scanning time and only fires near one of its words (api_key,
# password, pwd, secret, ...): lines without any of these stems skip it.
_KEYWORD_STEMS = re.compile(r"(?i)key|pass|pwd|secret|contrase")


# Texts known to hold nothing to redact (redact's outputs included: redacting twice changes nothing; and
# what a redacting column hands back, since it was redacted on its way in), so that the same text written
# again (an entry's text in each Event's snapshot, a checked input stored by the models' redacting fields)
# is not scanned again. Kept as digests, so that the bound is on a few megabytes whatever the texts'
# lengths: a sweep's batch of thousands of entries, each with its before and after snapshots, stays in it.
# Bounded: the oldest are forgotten first.
_KNOWN_CLEAN_MAX = 65_536
_known_clean: dict[bytes, None] = {}


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def remember_clean(text: str, digest: bytes | None = None) -> None:
    """`text` holds nothing to redact (a redacting column's stored value, or redact's own output). `digest`:
    its _digest, when the caller has it."""
    _known_clean[_digest(text) if digest is None else digest] = None
    if len(_known_clean) > _KNOWN_CLEAN_MAX:
        try:
            del _known_clean[next(iter(_known_clean))]
        except (KeyError, RuntimeError, StopIteration):  # another thread of the server forgot it first
            pass


@dataclass(frozen=True)
class Finding:
    kind: str
    field: str

    def as_flag(self) -> dict:
        return {"kind": "redacted", "detail": f"{self.kind} removed from {self.field}"}


@lru_cache(maxsize=1)
def _plugins() -> list[tuple[object, tuple]]:
    """Each plugin with the regexes a line must match for it to find anything. A regex plugin only
    reports what its denylist matches, so a line that matches none of them needs no scan: checking
    those first skips detect-secrets' per-call argument injection, most of the time of a clean line."""
    with default_settings():
        plugins = [p for p in get_plugins() if type(p).__name__ not in _SKIPPED_PLUGINS]
    gates = []
    for plugin in plugins:
        if isinstance(plugin, RegexBasedDetector):
            gates.append((plugin, tuple(plugin.denylist)))
        elif type(plugin).__name__ == "KeywordDetector":
            gates.append((plugin, (_KEYWORD_STEMS,)))
        else:
            gates.append((plugin, ()))  # no gate known: always scanned
    return gates


_SUBMITTED = "submitted-text"  # the file name plugins are told a text came from (its type picks the keyword regexes)


def _reporting_regexes(plugin, gate: tuple) -> tuple:
    """The regexes every finding of the plugin is a match of: a regex plugin's denylist (its gate), the keyword
    plugin's for a submitted text's file type; a plugin none of whose regexes can match a line finds nothing
    in it. Its gate when they are not known."""
    if type(plugin).__name__ == "KeywordDetector":
        try:
            from detect_secrets.plugins import keyword
            from detect_secrets.util.filetype import determine_file_type

            table = keyword.REGEX_BY_FILETYPE.get(
                determine_file_type(_SUBMITTED), keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
            )
            return tuple(table)
        except (ImportError, AttributeError):  # another version of detect-secrets: its gate screens it
            return gate
    return gate


@lru_cache(maxsize=1)
def _gate_screen() -> tuple[prefilter.Screen, tuple[int, ...], tuple[int, ...]]:
    """What may find something in a line, read together (prefilter.Screen): each plugin's reporting regexes,
    which plugin each belongs to, and the plugins nothing is known of (always scanned)."""
    plugins = _plugins()
    reporting = [_reporting_regexes(plugin, gate) for plugin, gate in plugins]
    owners = tuple(index for index, regexes in enumerate(reporting) for _ in regexes)
    unknown = tuple(index for index, regexes in enumerate(reporting) if not regexes)
    return prefilter.Screen([regex for regexes in reporting for regex in regexes]), owners, unknown


def _detect_secrets_values(text: str) -> list[tuple[str, str]]:
    found = []
    plugins = _plugins()
    screen, owners, unknown = _gate_screen()
    for line in text.splitlines() or [text]:
        context = None
        # The plugins a reporting regex of which could match the line (what none can match, none finds), in
        # order; each one's gate is then searched as before.
        for index in sorted({owners[i] for i in screen.possible(line)}.union(unknown)):
            plugin, gate = plugins[index]
            if gate and not any(regex.search(line) for regex in gate):
                continue
            context = context or get_code_snippet(lines=[line], line_number=1)
            for secret in (
                _scan_line(
                    plugin=plugin,
                    filename=_SUBMITTED,
                    line=line,
                    line_number=0,
                    context=context,
                    enable_eager_search=False,
                )
                or ()
            ):
                if secret.secret_value:
                    found.append((secret.type, secret.secret_value))
    return found


def _high_entropy_tokens(text: str) -> list[tuple[str, str]]:
    """Long random-looking tokens (API keys, session ids) that no named plugin knows."""
    found = []
    for token in _LONG_TOKEN.findall(text):
        classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"\d"))
        if classes == 3 and len(set(token)) >= 16:
            found.append(("high-entropy token", token))
    return found


def _luhn(digits: str) -> bool:
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(digits)):
        total += digit if index % 2 == 0 else (digit * 2 - 9 if digit > 4 else digit * 2)
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    return 15 <= len(compact) <= 34 and int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


# Words that end "the password is ..." as prose, not as the password itself.
_PROSE_ENDINGS = ("ed", "ing", "able", "ible", "ful", "less", "ous", "ive", "ly", "al")
_PROSE_WORDS = frozenset(
    "long short weak strong wrong right correct invalid valid required optional empty blank missing unknown new old "
    "same different secret set unset there here fine okay none null too not also still now gone known shared public "
    "private temporary mandatory simple complex random unique visible hidden safe unsafe case sensitive enough "
    "ours yours theirs mine his hers its the a an in on at for with".split()
)


def _ends_a_clause_as_a_name(match: re.Match) -> bool:
    """A lower-case word after "the password is" is the password when it is not a word prose ends such a
    sentence with ("... is required.") and it ends the clause (nothing but punctuation or the end after it),
    or is too long for a description ("correcthorsebattery")."""
    value = match.group("value").lower()
    if value in _PROSE_WORDS or value.endswith(_PROSE_ENDINGS):
        return False
    after = match.string[match.end() : match.end() + 2]
    ends = not after or not (after[0].isspace() and after[1:2].isalnum())
    return ends or len(value) >= 12  # mid-sentence, a word that long is a passphrase, not a description


def _is_match(kind: str, match: re.Match) -> bool:
    """Checks a pattern alone cannot make: a checksum, the shapes of dates and versions, prose."""
    found = match.group(0)
    digits = "".join(c for c in found if c.isdigit())
    if kind == "password" and not re.search(r"[:=]", found[: match.start("value") - match.start()]):
        value = match.group("value")  # "the password is rotated monthly" names no password
        return not (value.isalpha() and value.islower()) or _ends_a_clause_as_a_name(match)
    if kind == "aws access key":
        return any(c in found for c in "\n\u200b\u2060\ufeff")
    if kind == "card number":
        return _luhn(digits)
    if kind == "IBAN":
        return _iban_valid(found)
    if kind == "phone number":
        separators = set(re.sub(r"\d", "", found))
        return (
            len(digits) >= _MIN_PHONE_DIGITS and not _DATE.search(found) and not separators <= {"."}
        )  # 10.20.30.40 and 1.2.345.6789 are addresses and versions
    return True


@lru_cache(maxsize=8)
def _screen(patterns: tuple) -> prefilter.Screen:
    """The Screen of a tuple of (kind, pattern), read once."""
    return prefilter.Screen([pattern for _, pattern in patterns])


def _apply(patterns, text: str, field: str, findings: list[Finding]) -> str:
    screen = _screen(patterns)
    # Only the patterns that may match are applied (a sub of one that cannot would change nothing); once a
    # replacement changed the text, the rest are screened again on the new text.
    possible, position = screen.possible(text), 0
    while position < len(possible):
        index = possible[position]
        position += 1
        kind, pattern = patterns[index]

        def replace(match, kind=kind, pattern=pattern):
            if not _is_match(kind, match):
                return match.group(0)
            findings.append(Finding(kind, field))
            if "value" not in pattern.groupindex:
                return f"[REDACTED: {kind}]"
            start, end = match.span("value")
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + f"[REDACTED: {kind}]" + whole[end - offset :]

        replaced = pattern.sub(replace, text)
        if replaced != text:
            text = replaced
            possible, position = [later for later in screen.possible(text) if later > index], 0
    return text


def redact(text: str, field: str) -> tuple[str, list[Finding]]:
    """The text with every secret or personal datum replaced by [REDACTED: kind], and what was found.

    Credentials first (our patterns, then detect-secrets' plugins and long random tokens), personal data
    after: each detector sees whole values, never one another's leftovers."""
    if not text:
        return text, []
    given, digest = text, _digest(text)
    if digest in _known_clean:
        return text, []
    findings: list[Finding] = []
    text = _apply(_CREDENTIALS, text, field, findings)
    for kind, value in _detect_secrets_values(text) + _high_entropy_tokens(text):
        # A plugin may report only part of a token (a prefix such as "ghp"): redact the whole token, but
        # not the punctuation around it.
        for token in {t.strip(_TOKEN_EDGES) for t in re.findall(r"\S+", text) if value in t}:
            if value in token and "[REDACTED" not in token:
                text = text.replace(token, f"[REDACTED: {kind.lower()}]")
                findings.append(Finding(kind.lower(), field))
    text = _apply(_PERSONAL, text, field, findings)
    remember_clean(text, digest if text == given else None)  # a text nothing was found in: its digest is known
    return text, findings


def redact_fields(data: dict, fields) -> tuple[dict, list[Finding]]:
    """Redact the named text fields of a dict (a copy); lists of strings are redacted item by item."""
    cleaned = dict(data)
    findings: list[Finding] = []
    for field in fields:
        value = cleaned.get(field)
        if isinstance(value, str):
            cleaned[field], found = redact(value, field)
            findings += found
        elif isinstance(value, list):
            items = []
            for item in value:
                if isinstance(item, str):
                    item, found = redact(item, field)
                    findings += found
                items.append(item)
            cleaned[field] = items
    return cleaned, findings
