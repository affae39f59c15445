"""Role checks for views. Roles are groups with permissions (made by a data migration); every view
checks on the server. Anonymous users are sent to log in; a signed-in user without the permission gets 403."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

REVIEW = "curation.review_entry"
READ = "curation.view_entry"
PROMOTE = "curation.promote_skill"
EXPORT = "curation.export_history"


def require(perm: str):
    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.has_perm(perm):
                raise PermissionDenied(f"Your role does not allow this ({perm.split('.')[-1].replace('_', ' ')}).")
            return view(request, *args, **kwargs)

        return login_required(wrapped)

    return decorator


def role_names(user) -> list[str]:
    return sorted(g.name for g in user.groups.all()) if user.is_authenticated else []
