"""Who may see which scopes. A scope prefix covers itself and everything below it:
`acme/billing-api` covers `acme/billing-api/container`, never `acme/billing-api-v2` or `acme/web`."""

from django.db.models import Q


def scope_covers(prefix: str, scope: str) -> bool:
    return scope == prefix or scope.startswith(prefix + "/")


def scope_ancestors(scope: str) -> list[str]:
    """`a/b/c` -> ['a', 'a/b', 'a/b/c']: the scopes whose entries apply to work in `scope`."""
    parts = scope.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def scopes_overlap(a: str, b: str) -> bool:
    return scope_covers(a, b) or scope_covers(b, a)


def user_scope_prefixes(user) -> list[str] | None:
    """None means unrestricted. Cached on the user object for the request."""
    cached = getattr(user, "_scope_prefixes", "unset")
    if cached != "unset":
        return cached
    prefixes = sorted(user.scope_grants.values_list("prefix", flat=True)) if user.is_authenticated else []
    result = prefixes or None
    user._scope_prefixes = result
    return result


def user_can_see_scope(user, scope: str) -> bool:
    prefixes = user_scope_prefixes(user)
    return prefixes is None or any(scope_covers(p, scope) for p in prefixes)


def scope_q(prefixes: list[str] | None, field: str = "scope") -> Q:
    """A filter for rows under any of the prefixes (all rows when prefixes is None)."""
    if prefixes is None:
        return Q()
    q = Q(pk__in=[])
    for prefix in prefixes:
        q |= Q(**{field: prefix}) | Q(**{f"{field}__startswith": prefix + "/"})
    return q
