"""Who may see which scopes. A scope prefix covers itself and everything below it:
`acme/billing-api` covers `acme/billing-api/container`, never `acme/billing-api-v2` or `acme/web`.

People read and act only under their scope grants, an agent token under its own prefixes: no grants, no
prefixes, nothing. Every scope is a grant of its own (EVERY_SCOPE), so that taking away a person's last
grant narrows their reach to nothing and never widens it to everything; a Django superuser, who holds
every permission without being given it, reads every scope. Both checks are written here once, and so is what a scope may look like (`clean_scope`), which
every way a scope comes in uses: a submission, a retrieval, a filter, a form, a token, a grant."""

import re

from django.core.exceptions import ValidationError
from django.db.models import Q

SCOPE_MAX = 255
# Segments of a-z, 0-9, '.', '_' and '-', joined by '/'. A segment neither starts nor ends with '.': a scope
# is compared by prefix, so `acme/../globex` or `acme/./billing-api` would be one scope to the covering rule
# and another to whoever reads it as a path.
_SEGMENT = r"[a-z0-9_-](?:[a-z0-9._-]*[a-z0-9_-])?"
SCOPE_PATTERN = rf"^{_SEGMENT}(/{_SEGMENT})*$"
_SCOPE = re.compile(SCOPE_PATTERN)
_SEGMENT_CHARACTERS = re.compile(r"[a-z0-9._-]+")


EVERY_SCOPE = "*"  # a person's grant of every scope, present and future
NO_SCOPES = (
    "You have no scopes yet, so nothing is shown here and you can act on nothing. An administrator grants "
    "scopes in the admin (Scope grants)."
)


def clean_scope(value) -> str:
    """The scope as given; ValidationError saying what is wrong with it otherwise. Also the model fields'
    validator, so that a grant made in the admin is held to the same rule. Surrounding spaces are refused,
    never stripped: the published pattern forbids them, and a scope kept other than as typed is one that
    the person typing it cannot find again by what they typed."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("A scope is required, e.g. acme/billing-api.")
    if value != value.strip():
        raise ValidationError(
            f"No spaces before or after a scope ({value!r}): a scope is segments of a-z, 0-9, '.', '_' or '-', "
            "joined by '/'."
        )
    if len(value) > SCOPE_MAX:
        raise ValidationError(f"At most {SCOPE_MAX} characters.")
    if _SCOPE.match(value):
        return value
    segments = value.split("/")
    if illegal := [seg for seg in segments if not _SEGMENT_CHARACTERS.fullmatch(seg)]:
        raise ValidationError(
            f"Illegal scope segment {', '.join(map(repr, illegal))}: segments use only a-z, 0-9, "
            "'.', '_' or '-', joined by '/'."
        )
    dotted = ", ".join(repr(seg) for seg in segments if seg.startswith(".") or seg.endswith("."))
    raise ValidationError(
        f"Illegal scope segment {dotted}: a segment may not be '.' or '..', nor start or end with '.'."
    )


def clean_grant_prefix(value) -> str:
    """What a person's scope grant names: a scope (clean_scope), or EVERY_SCOPE."""
    return value if value == EVERY_SCOPE else clean_scope(value)


def scope_covers(prefix: str, scope: str) -> bool:
    return scope == prefix or scope.startswith(prefix + "/")


def governing_prefix(prefixes, scope: str) -> str | None:
    """Of the per-prefix settings `prefixes`, the one that governs `scope`: the longest that covers it (None
    when none does). Every setting kept per scope prefix (approvals, holdout, admission, embedding size)
    is read through this one rule."""
    return max(
        (p for p in prefixes if scope_covers(p.rstrip("/"), scope)), key=lambda p: len(p.rstrip("/")), default=None
    )


def covered_by_any(prefixes, scope: str) -> bool:
    return any(scope_covers(prefix, scope) for prefix in prefixes)


def scope_ancestors(scope: str) -> list[str]:
    """`a/b/c` -> ['a', 'a/b', 'a/b/c']: the scopes whose entries apply to work in `scope`."""
    parts = scope.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def scopes_overlap(a: str, b: str) -> bool:
    return scope_covers(a, b) or scope_covers(b, a)


def user_scope_prefixes(user) -> list[str] | None:
    """The prefixes the user reads and acts under: None for every scope (a grant of EVERY_SCOPE, or a
    superuser), an empty list for none (no grants). Cached on the user object for the request."""
    cached = getattr(user, "_scope_prefixes", "unset")
    if cached != "unset":
        return cached
    if not user.is_authenticated:
        result = []
    elif user.is_superuser:
        result = None
    else:
        prefixes = sorted(user.scope_grants.values_list("prefix", flat=True))
        result = None if EVERY_SCOPE in prefixes else prefixes
    user._scope_prefixes = result
    return result


def user_has_no_scopes(user) -> bool:
    return user_scope_prefixes(user) == []


def reach_of(user) -> str:
    """The user's scopes as a refusal names them."""
    prefixes = user_scope_prefixes(user)
    if prefixes is None:
        return "every scope"
    return ", ".join(prefixes) if prefixes else "none yet: an administrator grants scopes in the admin"


def user_can_see_scope(user, scope: str) -> bool:
    prefixes = user_scope_prefixes(user)
    return prefixes is None or covered_by_any(prefixes, scope)


def user_can_see_all(user, scopes) -> bool:
    """Does everything in `scopes` lie within the user's grants? What a lead may hand out, and manage, in
    an agent token: a token never reaches further than the person who made it."""
    return all(user_can_see_scope(user, scope) for scope in scopes)


def token_covers(token, scope: str) -> bool:
    """May this agent token read and write `scope`? Only under one of its own prefixes."""
    return covered_by_any(token.scopes, scope)


def under_scope(prefix: str, field: str = "scope") -> Q:
    """Rows whose `field` is the scope `prefix` or lies below it (a trailing slash is ignored)."""
    prefix = prefix.rstrip("/")
    return Q(**{field: prefix}) | Q(**{f"{field}__startswith": prefix + "/"})


def scope_q(prefixes: list[str] | None, field: str = "scope") -> Q:
    """A filter for rows under any of the prefixes (all rows when prefixes is None)."""
    if prefixes is None:
        return Q()
    q = Q(pk__in=[])
    for prefix in prefixes:
        q |= under_scope(prefix, field)
    return q


def token_scope_q(token, field: str = "scope") -> Q:
    """A filter for rows under the token's prefixes (no prefixes: no rows)."""
    return scope_q(list(token.scopes), field)


def overlapping_scopes_q(scope: str, *, bytewise: bool = False) -> Q:
    """Entries that apply together with one in `scope`: an ancestor, the same scope, or below it.
    Both halves are index lookups (exact scope IN, and a prefix range). `bytewise`: the database
    compares text byte by byte (SQLite), so "below" is the plain range from "<scope>/" up to "<scope>0"
    ("0" follows "/"), which its index serves; its LIKE for a prefix reads the whole table."""
    return overlapping_any_scope_q([scope], bytewise=bytewise)


def overlapping_any_scope_q(scopes, *, bytewise: bool = False) -> Q:
    """overlapping_scopes_q of any of `scopes` (a batch's): their ancestors in one IN list, then a prefix
    condition per scope, so a batch of hundreds of scopes is not twice as many conditions to plan."""
    scopes = sorted(set(scopes))
    q = Q(scope__in=sorted({ancestor for scope in scopes for ancestor in scope_ancestors(scope)}))
    for scope in scopes:
        q |= Q(scope__gte=scope + "/", scope__lt=scope + "0") if bytewise else Q(scope__startswith=scope + "/")
    return q
