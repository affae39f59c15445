"""What a text must contain for a regular expression to find anything in it, read from the pattern itself.

Every match of `\\bpass(?:word|phrase)\\b` contains "password" or "passphrase"; every match of a sequence contains
what each of its parts requires; every match of an alternation, what one of its branches requires. A text that
holds none of that cannot match, so its search is skipped and the answer is the search's own (None, no
replacement, no finding). A text that holds it is searched as before: this only decides when a search could
find nothing, never what a search finds.

Each pattern's condition is read once from its parse tree (re's own parser, so it is the pattern as compiled,
flags included). Only what is certain is kept: literal characters, small character sets, repeats of at least
one, groups and branches; anything else (`\\d`, `.`, a range, a back reference, a construct this module does
not know) requires nothing, so an unreadable pattern is always searched. Zero-width assertions (`\\b`, `^`,
look-arounds) consume nothing and add no requirement.

Case: a pattern that ignores case anywhere has its literals lower-cased and compared with the text folded
(`fold`): ASCII letters lower-cased, and the four other characters re's IGNORECASE matches with an ASCII letter
(İ ı ſ K) made that letter. A literal that is not ASCII in such a pattern requires nothing (its case partners
are not folded). tests/unit/test_prefiltered_checks.py checks the fold against re over every code point.
"""

from __future__ import annotations

import re

try:  # re's parser: private, so a Python that moves it leaves every pattern searched (no condition)
    from re import _constants as _op
    from re import _parser as _parser
except ImportError:  # pragma: no cover - every supported Python has them
    _op = _parser = None

# The most literal strings one condition lists (a sequence of small sets multiplies them).
_CAP = 64

# The characters re's IGNORECASE takes for an ASCII letter, and the letters themselves, as fold() maps them.
_FOLD = {**{c: c + 32 for c in range(ord("A"), ord("Z") + 1)}, 0x130: ord("i"), 0x131: ord("i"), 0x17F: ord("s")}
_FOLD[0x212A] = ord("k")  # KELVIN SIGN


def fold(text: str) -> str:
    """`text` as a case-insensitive pattern's literals are compared with it (see the module's note on case)."""
    return text.lower() if text.isascii() else text.translate(_FOLD)


# A condition: True (nothing required), ("any", strings), ("all", conditions) or ("one", conditions).
ANYTHING = True


def _any(strings) -> object:
    """One of `strings` must occur; the empty string (or none at all) requires nothing. A string that contains
    another of the set adds nothing and is dropped."""
    strings = set(strings)
    if not strings or "" in strings:
        return ANYTHING
    kept = sorted(strings, key=len)
    minimal = [s for i, s in enumerate(kept) if not any(k in s for k in kept[:i])]
    return ("any", tuple(minimal))


def _all(conditions) -> object:
    parts = []
    for condition in conditions:
        if condition is ANYTHING:
            continue
        parts += condition[1] if condition[0] == "all" else [condition]
    if not parts:
        return ANYTHING
    return parts[0] if len(parts) == 1 else ("all", tuple(parts))


def _one(conditions) -> object:
    parts, strings = [], []
    for condition in conditions:
        if condition is ANYTHING:
            return ANYTHING
        if condition[0] == "any":  # one of several sets of strings: one set of them all
            strings += condition[1]
        else:
            parts += condition[1] if condition[0] == "one" else [condition]
    if strings:
        parts.append(_any(strings))
    return parts[0] if len(parts) == 1 else ("one", tuple(parts))


def _uses_ignorecase(items) -> bool:
    for op, av in items:
        if op is _op.SUBPATTERN:
            if av[1] & re.IGNORECASE or _uses_ignorecase(av[3]):
                return True
        elif op is _op.BRANCH:
            if any(_uses_ignorecase(branch) for branch in av[1]):
                return True
        elif op in (_op.MAX_REPEAT, _op.MIN_REPEAT, _op.POSSESSIVE_REPEAT):
            if _uses_ignorecase(av[2]):
                return True
        elif op is _op.ATOMIC_GROUP:
            if _uses_ignorecase(av):
                return True
        elif op in (_op.ASSERT, _op.ASSERT_NOT):
            if _uses_ignorecase(av[1]):
                return True
    return False


class _Reader:
    """Reads a parse tree into (exact, condition): `exact` the set of every string the node can match when it
    is small and known (else None), `condition` what any match must contain."""

    def __init__(self, folded: bool):
        self.folded = folded

    def char(self, code: int) -> str | None:
        c = chr(code)
        if self.folded:
            return c.lower() if c.isascii() else None
        return c

    def node(self, op, av) -> tuple[frozenset | None, object]:
        if op is _op.LITERAL:
            c = self.char(av)
            return (frozenset([c]), _any([c])) if c is not None else (None, ANYTHING)
        if op is _op.IN:
            chars = set()
            for item_op, item_av in av:
                c = self.char(item_av) if item_op is _op.LITERAL else None
                if c is None:  # a range, a category, a negation: any of many characters
                    return None, ANYTHING
                chars.add(c)
            return (frozenset(chars), _any(chars)) if len(chars) <= _CAP else (None, ANYTHING)
        if op is _op.SUBPATTERN:
            return self.sequence(av[3])
        if op is _op.ATOMIC_GROUP:
            return self.sequence(av)
        if op is _op.BRANCH:
            read = [self.sequence(branch) for branch in av[1]]
            union = set()
            for exact, _ in read:
                union = None if exact is None or union is None else union | exact
            condition = _one([condition for _, condition in read])
            return (frozenset(union) if union is not None and len(union) <= _CAP else None), condition
        if op in (_op.MAX_REPEAT, _op.MIN_REPEAT, _op.POSSESSIVE_REPEAT):
            low, high, inner = av
            exact, condition = self.sequence(inner)
            if low == 0:
                return (exact | {""} if exact is not None and high == 1 else None), ANYTHING
            return (exact if low == high == 1 else None), condition
        if op in (_op.AT, _op.ASSERT, _op.ASSERT_NOT):
            return frozenset([""]), ANYTHING  # consumes nothing
        return None, ANYTHING  # any character, a category, a back reference, ...: nothing known

    def sequence(self, items) -> tuple[frozenset | None, object]:
        conditions = []
        run = {""}  # every string the current run of exactly known parts can match
        whole = True  # every part so far exactly known, and their strings few enough to list
        for op, av in items:
            exact, condition = self.node(op, av)
            if exact is not None and len(run) * len(exact) <= _CAP:
                run = {a + b for a in run for b in exact}
                continue
            whole = False
            conditions.append(_any(run))
            if exact is not None:
                run = set(exact)
            else:
                conditions.append(condition)
                run = {""}
        if whole:
            return frozenset(run), _any(run)
        conditions.append(_any(run))
        return None, _all(conditions)


def _expression(condition) -> str:
    """The condition as one Python expression over `t`, the text: `in` tests joined by `and` and `or`, which
    stop at the first answer (a nested tree walked call by call costs several times more). Each string is
    written by repr(), so it is compared as the literal it is."""
    kind, parts = condition
    if kind == "any":
        return "(" + " or ".join(f"{part!r} in t" for part in parts) + ")"
    # The shortest parts first: an "all" most often fails at its smallest set of strings.
    ordered = sorted((_expression(part) for part in parts), key=len)
    return "(" + f" {'and' if kind == 'all' else 'or'} ".join(ordered) + ")"


_NEVER = ("any", ())  # no string can be found: nothing is admitted


def _in_ascii(condition):
    """The condition over an ASCII text, which holds none of the strings that are not ASCII (a pattern's
    words of other scripts): those are dropped, and what needed only them admits nothing."""
    if condition is ANYTHING:
        return ANYTHING
    kind, parts = condition
    if kind == "any":
        kept = tuple(part for part in parts if part.isascii())
        return ("any", kept) if kept else _NEVER
    parts = [_in_ascii(part) for part in parts]
    if kind == "all":
        return _NEVER if _NEVER in parts else _all(parts)
    kept = [part for part in parts if part != _NEVER]
    return _one(kept) if kept else _NEVER


def _compiled(condition):
    if condition is ANYTHING:
        return None
    if condition == _NEVER:
        return lambda t: False
    return eval(compile(f"lambda t: {_expression(condition)}", "<prefilter>", "eval"), {})  # noqa: S307


class Prefilter:
    """A pattern's condition: `admits(text, folded)` is False only when the pattern cannot match `text`."""

    __slots__ = ("condition", "folded", "_test", "_ascii_test")

    def __init__(self, pattern: re.Pattern):
        self.condition, self.folded, self._test, self._ascii_test = ANYTHING, False, None, None
        if _parser is None or not isinstance(pattern.pattern, str):
            return
        try:
            tree = _parser.parse(pattern.pattern, pattern.flags)
        except Exception:  # a pattern re compiled but this parser reads otherwise: no condition
            return
        self.folded = bool(pattern.flags & re.IGNORECASE) or _uses_ignorecase(tree)
        self.condition = _Reader(self.folded).sequence(tree)[1]
        self._test = _compiled(self.condition)
        self._ascii_test = _compiled(_in_ascii(self.condition))

    def admits(self, text: str, folded: str | None = None) -> bool:
        """Could the pattern match `text`? `folded`: fold(text), when the caller has it already."""
        if self._test is None:
            return True
        test = self._ascii_test if text.isascii() else self._test  # the fold of ASCII is ASCII
        if self.folded:
            return test(fold(text) if folded is None else folded)
        return test(text)


# Prefilters by the pattern object (a Pattern's own hash reads its whole compiled code): each entry keeps its
# pattern, so that an id is never another pattern's while it is here.
_BY_ID: dict[int, tuple[re.Pattern, Prefilter]] = {}
_BY_ID_MAX = 512


def of(pattern: re.Pattern) -> Prefilter:
    """The pattern's Prefilter, read once."""
    known = _BY_ID.get(id(pattern))
    if known is not None and known[0] is pattern:
        return known[1]
    if len(_BY_ID) >= _BY_ID_MAX:
        _BY_ID.clear()
    made = Prefilter(pattern)
    _BY_ID[id(pattern)] = (pattern, made)
    return made


def may_match(pattern: re.Pattern, text: str, folded: str | None = None) -> bool:
    """False only when `pattern` cannot match `text`; then searching it is skipped."""
    return of(pattern).admits(text, folded)


def _key(condition) -> frozenset | None:
    """Strings one of which every text the condition admits contains (a weaker condition, one set), or None."""
    if condition is ANYTHING:
        return None
    kind, parts = condition
    if kind == "any":
        return frozenset(parts)
    keys = [_key(part) for part in parts]
    if kind == "one":
        return None if any(key is None for key in keys) else frozenset().union(*keys)
    known = [key for key in keys if key is not None]  # "all": the most selective part's strings
    return max(known, key=lambda key: (min(map(len, key)), -len(key))) if known else None


class Screen:
    """Many patterns' conditions read together: `possible(text)` answers, in order, the indexes of the patterns
    that may match `text`, testing each distinct key string once rather than each pattern in turn."""

    def __init__(self, patterns):
        self.filters = [of(pattern) for pattern in patterns]
        self.always: set[int] = set()
        keys: dict[tuple[str, bool], set[int]] = {}
        for index, screen in enumerate(self.filters):
            key = _key(screen.condition)
            if key is None:
                self.always.add(index)
            for string in key or ():
                keys.setdefault((string, screen.folded), set()).add(index)
        # A key that holds another (folded, as a text's fold holds every key of its own) is found with it: its
        # patterns go to the shorter key, so that each text tests few strings.
        shortest = sorted(keys, key=lambda key: (len(key[0]), not key[1]))
        merged: dict[tuple[str, bool], set[int]] = {}
        for string, folded in shortest:
            inside = next(
                (
                    (short, short_folded)
                    for short, short_folded in merged
                    if len(short) >= 3
                    and (short in string if short_folded == folded else short_folded and short in fold(string))
                ),
                None,
            )
            merged.setdefault(inside or (string, folded), set()).update(keys[string, folded])
        self.keys = tuple((string, folded, frozenset(indexes)) for (string, folded), indexes in merged.items())

    def possible(self, text: str) -> list[int]:
        folded = fold(text)
        hits = set(self.always)
        for string, in_folded, indexes in self.keys:
            if string in (folded if in_folded else text):
                hits |= indexes
        return [index for index in sorted(hits) if self.filters[index].admits(text, folded)]
