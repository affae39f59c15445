"""Role checks, written once. Roles are groups with permissions (made by a data migration, see roles.py);
every view checks on the server, and templates ask the same constants through `can` (the context
processor below), never a permission string. Anonymous users are sent to log in; a signed-in user
without the permission gets 403."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

from curation.rules import access

# One constant per action.
READ = "curation.view_entry"
REVIEW = "curation.review_entry"
EXPORT = "curation.export_history"
PROMOTE = "curation.promote_skill"
PUBLISH = "curation.publish_memory"
FORGET = "curation.handle_forget"
MANAGE_TOKENS = "curation.add_agenttoken"
# Starting background work changes what agents are served, like publishing: leads only.
RUN_TASKS = PUBLISH
# Deciding a candidate two reviewers disagreed on: leads only.
SETTLE = PUBLISH
# The settings per scope prefix (how many reviewers, the holdout, admission) change what agents are served
# and who decides: leads only.
SET_SCOPE_POLICIES = PUBLISH
# Importing another tool's memory brings in many lessons at once under a scope: leads only.
IMPORT_MEMORY = PUBLISH
# Memory tests hold a publish until a lead acknowledges their failure: leads keep them.
MANAGE_MEMORY_TESTS = PUBLISH


# Each action in words, for the 403 page ("Your role does not allow you to ..."): the page names what was
# refused, not a permission's code name.
ACTION_WORDS = {
    READ: "read the review console",
    REVIEW: "decide on review queues (approve, reject, defer, merge, resolve); reviewers and leads do",
    EXPORT: "export an entry's history",
    PROMOTE: "approve or retire skills; leads do",
    PUBLISH: "publish memory or start background tasks; leads do",
    FORGET: "approve or decline forget requests; leads do",
    MANAGE_TOKENS: "manage agent tokens; leads do",
}

# Who may make each skill decision, and what a refused user reads.
SKILL_DECISIONS = {
    "edit": (REVIEW, "Only reviewers and leads edit skill drafts."),
    "reject": (REVIEW, "Only reviewers and leads reject skill proposals."),
    "approve": (PROMOTE, "Only a lead may approve a skill promotion."),
    "retire": (PROMOTE, "Only a lead may retire a skill."),
}


def can_view_maintenance(user) -> bool:
    """Leads (who may run tasks) and auditors (who read everything but decide nothing)."""
    return user.has_perm(RUN_TASKS) or (user.has_perm(READ) and not user.has_perm(REVIEW))


def can_view_reviewers(user) -> bool:
    """The reviewers' decisions and agreement: leads and auditors, as maintenance."""
    return can_view_maintenance(user)


def require(perm, message: str = ""):
    """A view for users with `perm` (a permission, or a check of the user); `message` says who may, on the
    403 page."""
    allowed = perm if callable(perm) else (lambda user: user.has_perm(perm))
    refusal = message or f"Your role does not allow you to {ACTION_WORDS.get(perm, 'do this')}."

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not allowed(request.user):
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)

        return login_required(wrapped)

    return decorator


class Abilities:
    """What the signed-in user may do, for templates: `{% if can.review %}`."""

    CHECKS = {
        "review": REVIEW,
        "promote": PROMOTE,
        "publish": PUBLISH,
        "forget": FORGET,
        "export": EXPORT,
        "run_tasks": RUN_TASKS,
        "manage_tokens": MANAGE_TOKENS,
        "view_maintenance": can_view_maintenance,
        "view_reviewers": can_view_reviewers,
        "settle": SETTLE,
        "set_scope_policies": SET_SCOPE_POLICIES,
        "import_memory": IMPORT_MEMORY,
        "manage_memory_tests": MANAGE_MEMORY_TESTS,
    }

    def __init__(self, user):
        self._user = user

    def __getitem__(self, action: str) -> bool:
        check = self.CHECKS[action]
        return check(self._user) if callable(check) else self._user.has_perm(check)


def abilities(request) -> dict:
    """Context processor: `can`, what the user may do, and `no_scopes`, the message for a signed-in person
    without scope grants (read when a page shows it: a template calls it, at most one query)."""
    if not hasattr(request, "user"):
        return {}
    user = request.user

    def no_scopes() -> str:
        return access.NO_SCOPES if user.is_authenticated and access.user_has_no_scopes(user) else ""

    return {"can": Abilities(user), "no_scopes": no_scopes}
