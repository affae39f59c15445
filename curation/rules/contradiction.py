"""Do two lessons give opposite advice for the same situation? Pure functions, no database.

("A says 'restart first', B says 'never restart'"): two lessons conflict when their triggers
overlap and one tells the agent to do something the other tells it not to do. The advice is read as
*directives*: a polarity marker (always/must/use/prefer/... or never/don't/avoid/stop/...) followed by an
action phrase. Two directives contradict when their polarities differ, their action verbs are the same
(after light stemming) and their objects are compatible (one is missing, or most words are shared).

A clause that opens with a bare imperative ("Rebase onto main before pushing") is a positive directive
too; two bare imperatives never contradict each other, so a negative marker is always involved.

Detection is a proposal, not a verdict: a person reads both entries in the conflicts queue.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from curation.rules.similarity import words

# Trigger overlap: Jaccard over content words, or most of the shorter trigger's words shared.
TRIGGER_JACCARD = 0.3
TRIGGER_CONTAINMENT = 0.6
TRIGGER_MIN_SHARED = 2
# Object compatibility: one object missing, one a subset of the other, or this Jaccard.
OBJECT_JACCARD = 0.5
PHRASE_MAX_WORDS = 6

# Longest first: "must not" before "must", "do not" before "do".
NEGATIVE_MARKERS = (
    ("must", "not"),
    ("should", "not"),
    ("do", "not"),
    ("does", "not"),
    ("never", "ever"),
    ("no", "longer"),
    ("refrain", "from"),
    ("stop",),
    ("never",),
    ("don't",),
    ("dont",),
    ("doesn't",),
    ("mustn't",),
    ("shouldn't",),
    ("avoid",),
)
POSITIVE_MARKERS = (
    ("make", "sure", "to"),
    ("be", "sure", "to"),
    ("remember", "to"),
    ("always",),
    ("must",),
    ("should",),
    ("do",),
    ("use",),
    ("prefer",),
)
# Words that only carry the directive ("use X", "prefer X", "avoid using X"): dropped from the action.
LIGHT_VERBS = frozenset({"use", "using", "prefer", "preferring", "do", "doing", "to", "always", "first"})
# An action phrase ends where a condition, a reason or the next directive starts.
PHRASE_BOUNDARY = frozenset(
    "before after when whenever if unless until while because since so then but and or once as than "
    "instead rather otherwise except".split()
    # and where a prepositional phrase starts: "commit secrets to the repo" is about committing secrets
    + "to in on into onto for with without from at by during via through across".split()
)
# A clause that states something ("X is fine", "it saved us time") is not an order.
COPULAS = frozenset("is are was were be been isn't aren't".split())
PRONOUNS = frozenset("it its you we they i he she this that these those there here our their my".split())
# Heads too common to find a partner by: search by the action's objects instead ("be cleared").
WEAK_HEADS = frozenset("be have get make keep let go".split())
ARTICLES = frozenset("a an the your any".split())
_CLAUSE_SPLIT = re.compile(r"[.;:!?\n]+|,\s*|\s+-{1,2}\s+|\s+—\s+")
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass(frozen=True)
class Directive:
    positive: bool
    marker: str  # as written, lower case: "never", "do not", "" for a bare imperative
    verb: str  # the stemmed head of the action: "rebas"; "use X" / "prefer X" are about X
    objects: frozenset  # the stemmed words after the verb
    phrase: str  # the action as written: "rebase shared branches"
    head: str = ""  # the verb as written: "rebase"
    object_words: frozenset = frozenset()  # the objects as written

    @property
    def text(self) -> str:
        return f"{self.marker} {self.phrase}".strip()


@lru_cache(maxsize=8192)  # a lesson's words repeat across lessons: each stemmed once
def stem(word: str) -> str:
    """Just enough stemming to match rebase/rebases/rebasing/rebased and stop/stopping."""
    w = word.lower().replace("'", "")
    for suffix, keep in (("ing", 5), ("ed", 4), ("es", 4), ("s", 3)):
        if w.endswith(suffix) and len(w) > keep and not (suffix == "s" and w.endswith("ss")):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # stopp -> stop, committ -> commit
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _by_first_word(markers) -> dict[str, tuple]:
    """Markers keyed by their first word, longest first: a token that starts none is one dict lookup."""
    table: dict[str, list] = {}
    for marker in markers:
        table.setdefault(marker[0], []).append(marker)
    return {first: tuple(sorted(group, key=len, reverse=True)) for first, group in table.items()}


_NEGATIVE_BY_FIRST = _by_first_word(NEGATIVE_MARKERS)
_POSITIVE_BY_FIRST = _by_first_word(POSITIVE_MARKERS)
_MARKER_FIRST_WORDS = frozenset(_NEGATIVE_BY_FIRST) | frozenset(_POSITIVE_BY_FIRST)


def _match_marker(tokens: list[str], i: int, table: dict[str, tuple]) -> tuple[str, int] | None:
    for marker in table.get(tokens[i], ()):
        if len(marker) == 1 or tuple(tokens[i : i + len(marker)]) == marker:
            return " ".join(marker), len(marker)
    return None


def _action(tokens: list[str], start: int) -> tuple[list[str], int]:
    """The action phrase from `start`: up to a boundary word or the next marker, at most a few words."""
    phrase = []
    i = start
    while i < len(tokens) and len(phrase) < PHRASE_MAX_WORDS:
        tok = tokens[i]
        if tok in PHRASE_BOUNDARY:
            break
        # A marker ends the phrase, except as its first word: "don't stop the queue" is about stopping.
        if phrase and (
            _match_marker(tokens, i, _NEGATIVE_BY_FIRST)
            or (_match_marker(tokens, i, _POSITIVE_BY_FIRST) and tok not in LIGHT_VERBS)
        ):
            break
        phrase.append(tok)
        i += 1
    return phrase, i


def _directive(positive: bool, marker: str, phrase: list[str]) -> Directive | None:
    core = list(phrase)
    while core and (core[0] in LIGHT_VERBS or core[0] in ARTICLES or core[0] in ("not",)):
        core.pop(0)
    core = [t for t in core if t not in ARTICLES]
    if not core:
        return None
    kept = [t for t in core[1:] if _content_word(t) or t.isdigit()]
    return Directive(
        positive,
        marker,
        stem(core[0]),
        frozenset(stem(t) for t in kept),
        " ".join(phrase).strip(),
        head=core[0],
        object_words=frozenset(kept),
    )


@lru_cache(maxsize=8192)
def _content_word(token: str) -> bool:
    """Is the token a word similarity counts (not a stop word)?"""
    return token in words(token)


def _imperative(tokens: list[str]) -> bool:
    """Does a clause without a marker open with an order? Not "Skipping X is fine", "Merges happen"."""
    first = tokens[0]
    if (
        first in ARTICLES
        or first in PRONOUNS
        or first[0].isdigit()
        or first.endswith("ing")
        or (first.endswith("s") and not first.endswith("ss"))
    ):
        return False
    return not COPULAS & set(tokens)


def directives(text: str) -> list[Directive]:
    """Every directive in a lesson's content, in order."""
    found: list[Directive] = []
    normalised = text.lower().replace("’", "'").replace("`", " ")
    for clause in _CLAUSE_SPLIT.split(normalised):
        tokens = _TOKEN.findall(clause)
        i = 0
        explicit = False
        while i < len(tokens):
            if tokens[i] not in _MARKER_FIRST_WORDS:  # no marker starts with it
                i += 1
                continue
            hit = _match_marker(tokens, i, _NEGATIVE_BY_FIRST)
            positive = False
            if hit is None:
                hit = _match_marker(tokens, i, _POSITIVE_BY_FIRST)
                positive = True
            if hit is None:
                i += 1
                continue
            marker, width = hit
            explicit = True
            # "use X" and "prefer X" are positive markers that also belong to the phrase as written.
            phrase_start = i if marker in ("use", "prefer") else i + width
            phrase, end = _action(tokens, phrase_start)
            i = max(end, i + width)
            directive = _directive(positive, "" if marker in ("use", "prefer") else marker, phrase)
            if directive:
                found.append(directive)
        if not explicit and tokens and _imperative(tokens):
            # A bare imperative opening the clause: "Rebase onto main before pushing."
            phrase, _ = _action(tokens, 0)
            directive = _directive(True, "", phrase)
            if directive:
                found.append(directive)
    return found


def _words_overlap(wa: frozenset, wb: frozenset) -> bool:
    if not wa or not wb:
        return False
    shared = len(wa & wb)
    smaller = min(len(wa), len(wb))
    return shared / len(wa | wb) >= TRIGGER_JACCARD or (
        shared >= min(TRIGGER_MIN_SHARED, smaller) and shared / smaller >= TRIGGER_CONTAINMENT
    )


def triggers_overlap(a: str, b: str) -> bool:
    """Jaccard over content words (as similarity() measures it), or most of the shorter trigger shared."""
    return _words_overlap(words(a), words(b))


def _objects_compatible(a: frozenset, b: frozenset) -> bool:
    if not a or not b or a <= b or b <= a:
        return True
    return len(a & b) / len(a | b) >= OBJECT_JACCARD


def opposed(a: Directive, b: Directive) -> bool:
    return a.positive != b.positive and a.verb == b.verb and _objects_compatible(a.objects, b.objects)


@dataclass(frozen=True)
class Lesson:
    """A lesson read once, so a sweep compares many pairs without parsing the same text again. Each part is
    read when first asked for: the trigger's words when a pair's scopes and conditions overlap, the content's
    directives when the triggers overlap too (most pairs differ before that, and then the text is never
    parsed)."""

    trigger: str
    content: str

    @cached_property
    def trigger_words(self) -> frozenset:
        return words(self.trigger)

    @cached_property
    def directives(self) -> tuple:
        return tuple(directives(self.content))

    @property
    def action_keys(self) -> set[tuple[str, bool]]:
        return {(d.verb, d.positive) for d in self.directives}

    @property
    def search_words(self) -> set[str]:
        """Stems a contradicting partner's text must mention: the action's head, or its objects when the
        head is as common as "be". What an index lookup narrows partners by."""
        found = set()
        for d in self.directives:
            found |= set(d.objects) if d.verb in WEAK_HEADS else {d.verb}
        return {w for w in found if _searchable(w, w)}

    @property
    def object_terms(self) -> set[str]:
        """Every directive's objects as written: what to look partners up by when the heads give no
        index key ("never over-provision the worker pool": "over" is a stop word)."""
        return {w for w in set().union(*(d.object_words for d in self.directives)) if _searchable(w, stem(w))}

    @property
    def search_terms(self) -> set[str]:
        """search_words as written, for a full-text lookup that stems them its own way."""
        found = set()
        for d in self.directives:
            found |= set(d.object_words) if d.verb in WEAK_HEADS else {d.head}
        return {w for w in found if _searchable(w, stem(w))}


def _searchable(word: str, stemmed: str) -> bool:
    """A word worth an index lookup: not a number, and its stem longer than two letters."""
    return len(stemmed) > 2 and not word.isdigit()


def parse_lesson(trigger: str, content: str) -> Lesson:
    return Lesson(trigger, content)


def contradiction(a: Lesson, b: Lesson) -> str | None:
    if not _words_overlap(a.trigger_words, b.trigger_words) or not a.directives or not b.directives:
        return None
    for da in a.directives:
        for db in b.directives:
            if opposed(da, db):
                return f'"{da.text}" against "{db.text}"'
    return None


def find_contradiction(a_trigger: str, a_content: str, b_trigger: str, b_content: str) -> str | None:
    """A short reason (`"always rebase" against "never rebase"`) when the two lessons overlap in their
    triggers and give opposite advice about the same action; None otherwise."""
    return contradiction(parse_lesson(a_trigger, a_content), parse_lesson(b_trigger, b_content))


def action_stems(content: str) -> set[str]:
    """The stemmed action verbs of a lesson: a partner can only contradict it about one of these."""
    return {d.verb for d in directives(content)}


def conditions_overlap(a, b) -> bool:
    """Conditions are keywords of the situations an entry applies to. No conditions means every
    situation; two entries with disjoint keyword sets apply to different situations."""
    sa = {c.strip().lower() for c in (a or []) if c.strip()}
    sb = {c.strip().lower() for c in (b or []) if c.strip()}
    return not sa or not sb or bool(sa & sb)
