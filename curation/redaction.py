"""Find secrets and personal data in submitted text and redact them before anything is stored.

detect-secrets finds credentials (its plugins, with their entropy limits); our own patterns add
private keys, bearer tokens, e-mail addresses and phone numbers. A finding never carries the raw
value: only its kind and the field it was in, so flags, events and logs cannot leak it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from detect_secrets.core.scan import _scan_line
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.settings import default_settings, get_plugins
from detect_secrets.util.code_snippet import get_code_snippet

_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private key", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S)),
    ("bearer token", re.compile(r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9\-._~+/]{16,}=*)")),
    ("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|token)\b\s*[:=]\s*['\"]?(?P<value>[^\s'\"]{6,})")),
    ("credential in URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<value>[^\s@/]+)@")),
    ("e-mail address", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    ("phone number", re.compile(r"(?<![\w.])\+?\d[\d ().-]{7,}\d(?![\w.])")),
]
_MIN_PHONE_DIGITS = 9
# Entropy plugins flag ordinary words and identifiers in prose; credentials keep their own plugins.
_SKIPPED_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString"}
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
# The keyword plugin is most of the scanning time and only fires near one of its words (api_key,
# password, pwd, secret, ...): lines without any of these stems skip it.
_KEYWORD_STEMS = re.compile(r"(?i)key|pass|pwd|secret|contrase")


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


def _detect_secrets_values(text: str) -> list[tuple[str, str]]:
    found = []
    for line in text.splitlines() or [text]:
        context = None
        for plugin, gate in _plugins():
            if gate and not any(regex.search(line) for regex in gate):
                continue
            context = context or get_code_snippet(lines=[line], line_number=1)
            for secret in _scan_line(plugin=plugin, filename="submitted-text", line=line, line_number=0,
                                     context=context, enable_eager_search=False) or ():
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


def redact(text: str, field: str) -> tuple[str, list[Finding]]:
    """The text with every secret or personal datum replaced by [REDACTED: kind], and what was found."""
    if not text:
        return text, []
    findings: list[Finding] = []
    for kind, pattern in _PATTERNS:
        def replace(match, kind=kind):
            if kind == "phone number" and sum(c.isdigit() for c in match.group(0)) < _MIN_PHONE_DIGITS:
                return match.group(0)
            findings.append(Finding(kind, field))
            if "value" not in pattern.groupindex:
                return f"[REDACTED: {kind}]"
            start, end = match.span("value")
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + f"[REDACTED: {kind}]" + whole[end - offset:]

        text = pattern.sub(replace, text)
    for kind, value in _detect_secrets_values(text) + _high_entropy_tokens(text):
        # A plugin may report only part of a token (a prefix such as "ghp"): redact the whole token.
        for token in {t for t in re.findall(r"\S+", text) if value in t and "[REDACTED" not in t}:
            text = text.replace(token, f"[REDACTED: {kind.lower()}]")
            findings.append(Finding(kind.lower(), field))
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
