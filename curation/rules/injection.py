"""Find text that tries to instruct the agent beyond the lesson: override phrases ("ignore previous
instructions", in several languages), requests to reveal or send secrets, links and image beacons to hosts
the team does not know, tool-call or chat-role markup, and hidden Unicode (tag characters, bidirectional
overrides, zero-width characters).

A lesson is text an agent will put in its own prompt, so it is an instruction channel: whatever a lesson says
is read with the agent's authority. The detector is pure (text in, findings out) and a finding never carries
the text it found, only what kind of thing it is and the field it was in (and, for a link, its host), so a
flag, an Event or a log line cannot carry the payload on. What is found quarantines the entry: the write path
(services/entry_writes.py) lets only a lead approve it, and agents are served a placeholder instead of it.

DETECTOR_VERSION names these rules: an entry stamped with an older version is scanned again by the
injection sweep (sweeps/injection_scan.py), so a rule added here reaches entries approved before it. Raise
it whenever a change here could flag text the previous rules passed.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from curation.rules import config, prefilter

DETECTOR_VERSION = 1
FLAG_KIND = "injection"
WITHHELD = "withheld for review, #{entry_id}"

# The text fields of an entry an agent is served (the context block, the export, the API's entry).
SCANNED_FIELDS = ("trigger", "content", "boundary", "conditions", "recheck_when")


@dataclass(frozen=True)
class Finding:
    what: str  # "override phrase", "secret request", "link to unknown host x", ...
    field: str

    def as_flag(self) -> dict:
        return {"kind": FLAG_KIND, "detail": f"{self.what} in {self.field}"}


def withheld_text(entry_id) -> str:
    """What an agent reads instead of a quarantined entry's text."""
    return WITHHELD.format(entry_id=entry_id)


def is_injection_flag(flag) -> bool:
    return isinstance(flag, dict) and flag.get("kind") == FLAG_KIND


# --- hidden Unicode ------------------------------------------------------------------------------------------

_TAGS = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
# Zero-width and invisible joiners; a zero-width joiner between two emoji (a family, a flag) is how emoji are
# written, and is let through.
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060-\u2064\ufeff\u180e\U000e0100-\U000e01ef]")
_EMOJI_AROUND_ZWJ = re.compile(
    "(?<=[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f])\u200d(?=[\u2600-\u27bf\U0001f000-\U0001faff])"
)


def _hidden(text: str) -> list[str]:
    found = []
    if text.isascii():  # each of these is a set of characters outside ASCII
        return found
    if _TAGS.search(text):
        found.append("hidden Unicode tag characters")
    if _BIDI.search(text):
        found.append("bidirectional override characters")
    if _INVISIBLE.search(_EMOJI_AROUND_ZWJ.sub("", text)):
        found.append("zero-width characters")
    return found


class _FormatCharacters(dict):
    """str.translate's table that removes the format characters (Unicode category Cf), each code point's
    category read once."""

    def __missing__(self, code: int):
        kept = None if unicodedata.category(chr(code)) == "Cf" else code
        self[code] = kept
        return kept


_WITHOUT_FORMAT_CHARACTERS = _FormatCharacters()
_SPACES = re.compile(r"[^\S\n]+")
_UNEVEN_SPACES = re.compile(r"[^\S\n ]|[^\S\n]{2}")  # what _SPACES would change: not one plain space


def normalised(text: str) -> str:
    """The text as it reads: compatibility forms folded (full-width letters), invisible characters and tag
    characters removed (so they cannot split a phrase), case folded, spaces collapsed."""
    return _readable(_compatible(text))


def _compatible(text: str) -> str:
    """NFKC, which leaves ASCII as it is."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _readable(compatible: str) -> str:
    """normalised() of a text already in NFKC: format characters (none in ASCII) removed, case folded, spaces
    collapsed."""
    if not compatible.isascii():
        compatible = compatible.translate(_WITHOUT_FORMAT_CHARACTERS)
    folded = compatible.casefold()
    if _UNEVEN_SPACES.search(folded):
        folded = _SPACES.sub(" ", folded)
    return folded.strip()  # lines kept: a line ends a request


# --- override phrases ----------------------------------------------------------------------------------------

_QUALIFIER = (
    r"(?:previous|prior|above|preceding|earlier|foregoing|former|original|initial|old|existing|all|any|every|"
    r"your|system|safety|developer|other|the previous|these|those)"
)
_ORDERS = (
    r"(?:instructions?|prompts?|guidelines|directions|directives|guardrails|rules|constraints|restrictions|"
    r"policies|programming|context|messages|commands|orders|system prompt|guidance)"
)
_OVERRIDE = [
    # ignore / disregard / forget ... previous instructions
    rf"\b(?:ignore|disregard|forget|override|overrule|bypass|skip|drop|discard|abandon|neglect|set aside|throw out)"
    rf"\b(?:\s+\S+){{0,3}}?\s+{_QUALIFIER}\b(?:\s+\S+){{0,2}}?\s+{_ORDERS}\b",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all(?: of)?(?: that| this)?)\s+(?:above|before|"
    r"previously|prior|earlier|you(?:'ve| have)? (?:been|were) told|i (?:said|told you))",
    r"\byou\s+are\s+(?:now|no longer)\b(?:\s+\S+){0,2}?\s*(?:a|an|the|in|dan|unrestricted|jailbroken|free|"
    r"bound|allowed|required|limited|restricted|an? ai)\b",
    r"\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:are|were)\s+)?(?:an?\s+)?(?:unrestricted|unfiltered|"
    r"jailbroken|dan|evil|uncensored|root|system administrator with no)\b",
    r"\b(?:enter|enable|activate|switch to|turn on)\s+(?:the\s+)?(?:developer|god|jailbreak|dan|debug|sudo|"
    r"unrestricted|admin)\s+mode\b",
    r"\bpretend\s+(?:that\s+)?(?:you\s+are|to\s+be|you're)\s+(?:an?\s+)?(?:unrestricted|different|evil|"
    r"jailbroken|system|new)\b",
    r"\bnew\s+(?:system\s+)?(?:instructions?|rules|directives|orders)\s*[:\-]",
    r"\b(?:system|admin|administrator|developer|operator|security)\s+(?:override|notice|instruction|"
    r"message|command|directive|update)\s*[:\]!]",
    r"\b(?:do not|don't|never)\s+(?:tell|inform|mention (?:this|it) to|reveal (?:this|it) to|alert|notify)\s+"
    r"(?:the\s+)?(?:user|human|operator|reviewer|developer|team)",
    r"\bwithout\s+(?:telling|informing|notifying|asking|alerting)\s+(?:the\s+)?(?:user|human|operator|reviewer)",
    r"\b(?:these|this|the following)\s+(?:instructions?|rules?|directives?)\s+(?:take|takes|have|has)\s+"
    r"(?:precedence|priority)\b",
    r"\b(?:supersedes?|overrides?|replaces?)\s+(?:all\s+)?(?:your\s+)?(?:other|previous|prior|existing|system)\s+"
    r"(?:instructions?|rules|prompts?)",
    r"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:ai|assistant|agent|llm|language model|"
    r"model|bot)\s*[:,\-]",
    r"\b(?:ai|assistant|agent|llm|chatbot|model)s?\s*[,:]\s*(?:you\s+)?(?:must|should|will|shall)\s+(?:now\s+)?"
    r"(?:ignore|disregard|obey|forget|stop following)",
    r"\bstop\s+following\s+(?:your|the|all|any)\s+(?:\S+\s+)?(?:instructions?|rules|guidelines|prompt)",
    # German
    r"\b(?:ignorier\w*|vergiss|vergessen sie|missachte\w*|übergeh\w*|verwirf)\b[^.\n]{0,50}?\b(?:vorherig\w*|"
    r"bisherig\w*|obig\w*|vorig\w*|alle\w*|früher\w*|vorangegangen\w*)\b[^.\n]{0,20}?(?:anweisung\w*|"
    r"instruktion\w*|regeln|befehle|vorgaben|anordnung\w*)",
    r"\b(?:du bist|sie sind) (?:jetzt|ab sofort|nun) (?:ein|eine|der|die|im)\b",
    # French
    r"\b(?:ignore[zrs]?|oublie[zrs]?|ne tiens pas compte|ne tenez pas compte|fais abstraction)\b[^.\n]{0,50}?"
    r"(?:instructions|consignes|règles|directives|ordres)\b[^.\n]{0,20}?(?:précédent\w*|antérieur\w*|"
    r"ci-dessus|donné\w*|initial\w*)",
    r"\b(?:ignore[zrs]?|oublie[zrs]?)\s+(?:toutes?\s+)?(?:les|tes|vos)\s+(?:instructions|consignes|règles)",
    r"\b(?:tu es|vous êtes) (?:maintenant|désormais) (?:un|une|le|la|en)\b",
    # Spanish, Italian, Portuguese
    r"\b(?:ignora|ignore|ignorar|olvida|olvide|olvidar|descarta|omite|dimentica|esqueça|esqueca)\b[^.\n]{0,50}?"
    r"(?:instrucciones|reglas|indicaciones|órdenes|istruzioni|regole|instruções|instrucoes|regras)\b"
    r"[^.\n]{0,20}?(?:anteriores|previas|precedentes|precedenti|de arriba|sopra|acima|iniciales)",
    r"\b(?:ahora eres|a partir de ahora eres|ora sei|agora você é|agora voce e)\b",
    # Russian
    r"(?:игнорируй\w*|проигнорируй\w*|забудь\w*|не обращай\w* внимани\w*)[^.\n]{0,50}?"
    r"(?:инструкци\w*|указани\w*|правил\w*|команд\w*)",
    r"\bты теперь\b",
    # Chinese, Japanese, Korean (no word boundaries: a verb of ignoring near a word for instructions)
    r"(?:忽略|无视|無視|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|丢弃|抛开)[^。！\n]{0,15}?(?:指令|指示|说明|說明|规则|"
    r"規則|提示|命令|设定|設定|要求)",
    r"(?:你现在是|你現在是|从现在开始你是|從現在開始你是|扮演一个不受限制)",
    r"(?:指示|命令|ルール|プロンプト)[^。\n]{0,10}?(?:無視|忘れ)",
    r"(?:以前|前|上記|これまで)の[^。\n]{0,10}?(?:無視して|忘れて)",
    r"(?:지시|명령|지침|규칙|프롬프트)[^.\n]{0,10}?(?:무시|잊어)",
]
_OVERRIDE_RE = re.compile("|".join(f"(?:{p})" for p in _OVERRIDE))

# --- requests to reveal or send secrets -----------------------------------------------------------------

_SECRETS = (
    r"(?:secrets?|tokens?|api[ _-]?keys?|access[ _-]?keys?|private[ _-]?keys?|ssh[ _-]?keys?|passwords?|"
    r"passphrases?|credentials?|cookies?|session ids?|\.env(?![.\w])|env(?:ironment)?[ _-]?var(?:iable)?s|"
    r"aws_secret\w*|bearer|\.aws/credentials|\.ssh|/etc/passwd|/etc/shadow|keychain|"
    r"(?:your|the)\s+(?:system\s+)?prompt|(?:your|the)\s+(?:hidden\s+|initial\s+|original\s+)?instructions)"
)
_DISCLOSE = (
    r"(?:reveal|print|output|send|post|upload|leak|exfiltrate|share|disclose|dump|display|show|echo|paste|"
    r"forward|e-?mail|transmit|include|append|repeat|write out|tell me|give me|attach|submit|report|"
    r"return|list|read out|embed|encode)"
)
_EXFIL_RE = re.compile(rf"\b{_DISCLOSE}\b[^.;!?\n]{{0,60}}?{_SECRETS}")
# Where the secret is to go or whose it is: without one of these, "print the environment variables to debug
# the build" is a lesson, not an exfiltration.
_EXFIL_DESTINATION = re.compile(
    r"https?://|\bwebhook|\bto me\b|\bto us\b|\bto this\b|\bto the following\b|\bin (?:your|the) (?:reply|"
    r"response|answer|output|next message|summary|commit message|pr description)|\battacker|\bpastebin|"
    r"⟦address⟧|\bquery string|\?\w+=|\burl\b|\bimage\b|\bdns\b|\ball (?:the |of the |your )?"
    r"(?:secrets|tokens|keys|passwords|credentials|cookies|env)|\bevery (?:secret|token|key|password|credential)|"
    r"\byour (?:system )?prompt|\byour (?:hidden |initial |original )?instructions|\byour (?:api )?keys?\b|"
    r"\byour (?:own )?(?:tokens?|credentials|secrets|passwords|cookies)|\.aws/credentials|\.ssh\b|/etc/(?:passwd|shadow)"
)
_NEGATION = re.compile(
    r"\b(?:never|don't|dont|do not|does not|doesn't|not|avoid|avoids|without|no one|nobody|stop|must not|mustn't|"
    r"should not|shouldn't|cannot|can't|refuse|refuses|won't|will not|no)\b[^.;!?\n]*$"
)
_EXFIL_FOREIGN = re.compile(
    r"\b(?:sende|schicke|schick|gib|zeige|zeig|verrate|poste|übermittle|lade)\b[^.\n]{0,60}?(?:token|passw|"
    r"schlüssel|zugangsdaten|geheimnis|api-key|api key|umgebungsvariablen)"
    r"|\b(?:envoie|envoyez|révèle|révélez|affiche|affichez|donne|donnez|transmets|transmettez)\b[^.\n]{0,60}?"
    r"(?:jeton|token|mot de passe|mots de passe|clé|clés|identifiants|secrets?|variables d'environnement)"
    r"|\b(?:envía|envia|envíe|revela|revele|muestra|muestre|dame|comparte|manda)\b[^.\n]{0,60}?(?:token|"
    r"contraseña|clave|credenciales|secretos?|variables de entorno)"
    r"|(?:泄露|泄漏|发送|發送|透露|告诉我|告訴我|输出|輸出|打印|上传|上傳|发给|發給)[^。\n]{0,20}?(?:密钥|密鑰|令牌|密码|"
    r"密碼|token|系统提示|系統提示|凭证|憑證|api|环境变量|環境變數)"
    r"|(?:密钥|密鑰|令牌|密码|密碼|token|凭证|憑證|系统提示|系統提示|环境变量|環境變數)[^。\n]{0,20}?(?:发送|發送|发给|發給|泄露|"
    r"泄漏|上传|上傳|透露|告诉|告訴)"
    r"|(?:送信|表示|教えて|出力)[^。\n]{0,20}?(?:トークン|パスワード|api|シークレット|認証情報)"
    r"|(?:トークン|パスワード|apiキー|シークレット|認証情報)[^。\n]{0,20}?(?:送信|送って|教えて|表示して|出力して)"
)
_NEGATION_FOREIGN = re.compile(
    r"(?:\bnicht\b|\bniemals\b|\bkeine?\b|\bjamais\b|\bne\b|\bn'|\bnunca\b|\bno\b|不要|切勿|绝不|絶対に)[^.。\n]*$"
)

# --- links and image beacons -------------------------------------------------------------------------------

_URL = re.compile(r"(?:\b[a-z][a-z0-9+.-]*:)?//([a-z0-9\[\]._~%-]+(?::\d+)?)|\bwww\.([a-z0-9-]+(?:\.[a-z0-9-]+)+)")
_IMAGE = re.compile(
    r"!\[[^\]\n]{0,200}\]\(\s*<?\s*(?:[a-z]+:)?//([^/\s)>]+)"
    r"|<\s*(?:img|image|iframe|video|audio|source|link|script|object|embed)\b[^>]*?\b(?:src|href|data)\s*=\s*"
    r"[\"']?\s*(?:[a-z]+:)?//([^/\s\"'>]+)"
    r"|!\[[^\]\n]{0,200}\]\[[^\]\n]*\][\s\S]{0,2000}?\n\s*\[[^\]\n]*\]:\s*(?:[a-z]+:)?//([^/\s]+)",
    re.I,
)
# Reserved names (RFC 2606, RFC 6761) and private addresses: examples and one's own machines, never a third party.
_RESERVED = re.compile(
    r"^(?:localhost|[\w.-]+\.(?:example|test|invalid|localhost|local|internal|lan|home\.arpa)|"
    r"(?:[\w-]+\.)*example\.(?:com|net|org)|127\.\d+\.\d+\.\d+|10\.\d+\.\d+\.\d+|192\.168\.\d+\.\d+|"
    r"172\.(?:1[6-9]|2\d|3[01])\.\d+\.\d+|0\.0\.0\.0|\[::1\]|::1)$"
)


def _host(raw: str) -> str:
    host = raw.rsplit("@", 1)[-1]  # user:pass@host
    if not host.startswith("["):
        host = host.split(":", 1)[0]
    return host.strip(".").rstrip(".,;:!?)'\"").lower()


def known_host(host: str, known=None) -> bool:
    """A host the team knows: its own (INJECTION_KNOWN_HOSTS, and any name below one), a reserved example
    name, or a private address."""
    if not host or _RESERVED.match(host):
        return True
    known = config.INJECTION_KNOWN_HOSTS.value if known is None else known
    return any(host == k or host.endswith("." + k) for k in known)


def _links(text: str, known) -> list[str]:
    found = []
    beacons = set()
    for match in _IMAGE.finditer(text) if prefilter.may_match(_IMAGE, text) else ():
        host = _host(next(g for g in match.groups() if g))
        beacons.add(host)
        if not known_host(host, known):
            found.append(f"image beacon to unknown host {host[:60]}")
    for match in _URL.finditer(text) if prefilter.may_match(_URL, text) else ():
        host = _host(match.group(1) or match.group(2))
        if host not in beacons and "." in host.strip("[]") and not known_host(host, known):
            found.append(f"link to unknown host {host[:60]}")
    return found


# --- role and tool-call markup -----------------------------------------------------------------------------

_MARKUP = re.compile(
    r"<\|\s*[a-z_]+(?:\s*\|\s*[a-z_]+)*\s*\|>"  # <|im_start|>, <|system|>, <|eot_id|>
    r"|<\s*/?\s*(?:tool_call|tool_calls|tool_use|tool_result|tool_response|function_call|function_calls|"
    r"function_results|invoke|system|system_prompt|assistant|instructions|sys|antml:[a-z_]+|im_start|im_end)\b[^>]*>"
    r"|\[/?inst\]|<<\s*/?sys\s*>>|\[/?(?:system|assistant)\]"
    r"|^\s*#{1,4}\s*(?:system|assistant|instruction|instructions|new instructions)\s*:?\s*$"
    r"|^\s*(?:system|assistant)\s*:\s*\S"
    r"|\"role\"\s*:\s*\"(?:system|assistant|tool|developer|function)\""
    r"|\"(?:tool_calls?|function_call|tool_use)\"\s*:",
    re.I | re.M,
)


def scan(text: str, field: str, *, known_hosts=None) -> list[Finding]:
    """What in `text` tries to instruct the agent beyond the lesson, each kind of thing once; [] when nothing.
    `known_hosts`: the allowlist to use (the setting's, by default)."""
    if not text:
        return []
    whats = _hidden(text)
    compatible = _compatible(text)
    plain = _readable(compatible)
    if prefilter.may_match(_OVERRIDE_RE, plain) and _OVERRIDE_RE.search(plain):
        whats.append("override phrase")
    if _asks_for_secrets(plain):
        whats.append("request to reveal or send secrets")
    whats += _links(plain, known_hosts)
    if prefilter.may_match(_MARKUP, compatible) and _MARKUP.search(compatible):
        whats.append("tool-call or role markup")
    return [Finding(what, field) for what in dict.fromkeys(whats)]


# What redaction left ("[REDACTED: password]") names a kind of secret without being a request for one; an
# address it took out is still where something would be sent.
_REDACTED = re.compile(r"\[redacted: ([^\]\n]{1,40})\]")


def _asks_for_secrets(plain: str) -> bool:
    if prefilter.may_match(_REDACTED, plain):
        plain = _REDACTED.sub(lambda m: "⟦address⟧" if "e-mail" in m.group(1) else "⟦value⟧", plain)
    for match in _EXFIL_RE.finditer(plain) if prefilter.may_match(_EXFIL_RE, plain) else ():
        before = plain[max(0, match.start() - 40) : match.start()]
        if _NEGATION.search(before):
            continue
        around = plain[max(0, match.start() - 80) : match.end() + 120]
        if _EXFIL_DESTINATION.search(around):
            return True
    for match in _EXFIL_FOREIGN.finditer(plain) if prefilter.may_match(_EXFIL_FOREIGN, plain) else ():
        if not _NEGATION_FOREIGN.search(plain[max(0, match.start() - 30) : match.start()]):
            return True
    return False


def scan_fields(values: dict, fields=SCANNED_FIELDS, *, known_hosts=None) -> list[Finding]:
    """scan() over the named fields of a dict of an entry's values (a list of strings item by item)."""
    findings: list[Finding] = []
    for name in fields:
        value = values.get(name)
        for text in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(text, str):
                findings += [f for f in scan(text, name, known_hosts=known_hosts) if f not in findings]
    return findings


# --- the other texts an agent may be served: evidence and skill drafts ------------------------------------------

# A piece of evidence's texts: an agent reading an entry reads them too.
EVIDENCE_FIELDS = ("excerpt", "task_ref")


def found(values: dict, fields) -> list[str]:
    """What scan_fields finds in `fields` of `values`, as the card says it ("override phrase in steps"): the one
    form an evidence piece's mark and a skill draft's finding are stored and shown in."""
    return as_found(scan_fields(values, fields))


def as_found(findings: list[Finding]) -> list[str]:
    """Findings in found()'s form."""
    return [finding.as_flag()["detail"] for finding in findings]


def evidence_found(piece: dict) -> list[str]:
    """found() over a cleaned piece of evidence (its excerpt and task reference)."""
    return found(piece, EVIDENCE_FIELDS)
