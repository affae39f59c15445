import contextvars
import uuid

from csp import middleware as csp
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.utils import build_policy
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

from curation.rules.storable_text import text_problem, unstorable_parameters

# Shared by every Event one request writes, so an auditor can see what one click did.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("current_request_id", default="")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = uuid.uuid4().hex
        token = current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response["X-Request-Id"] = request_id
        return response


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class UnstorableInputMiddleware:
    """A NUL character in the path, a query parameter or a posted form field is answered 422, naming the
    field, before any view reads it: PostgreSQL would refuse it mid-request with a 500 (and SQLite would
    store text that PostgreSQL cannot take back). The agent API's JSON bodies are checked where they are
    parsed (api/http.py), with the same rule."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        errors = {"path": [problem]} if (problem := text_problem(request.path)) else {}
        errors.update(unstorable_parameters(request.GET))
        if request.method == "POST" and request.content_type in FORM_TYPES and not request.path.startswith("/api/"):
            try:
                errors.update(unstorable_parameters(request.POST))
            except MultiPartParserError:
                pass  # a broken form body: the view answers it as it did before
        if not errors:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": "Some parameters are not valid.", "errors": errors}, status=422)
        lines = "\n".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        return HttpResponse(
            f"Some fields are not valid.\n{lines}\n", status=422, content_type="text/plain; charset=utf-8"
        )


# HTML pages under /api/, read in a browser: the console's middleware runs for them.
API_PAGES = frozenset({"/api/v1/docs"})


def is_agent_api_call(request) -> bool:
    """A call of the agent API: JSON under /api/ with a bearer token, which reads no cookie, session,
    signed-in user or message."""
    path = request.path_info
    return path.startswith("/api/") and path not in API_PAGES


class ConsoleOnly:
    """Mixed into a middleware the console needs and an agent API call does not: it is skipped for those
    calls (each is CPU on every agent read) and runs as before for every other request. For a middleware
    with only __call__'s hooks (process_request, process_response): one with process_view would need it too."""

    def __call__(self, request):
        if is_agent_api_call(request):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(ConsoleOnly, sessions.SessionMiddleware):
    pass


class AuthenticationMiddleware(ConsoleOnly, auth.AuthenticationMiddleware):
    pass


class MessageMiddleware(ConsoleOnly, messages.MessageMiddleware):
    pass


# What a response or a request may carry that changes its policy: a view's own (django-csp's decorators), a
# nonce a page read. Without them, a policy depends on the settings alone.
PER_RESPONSE_POLICY = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
POLICIES = (
    (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt"),
    (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro"),
)


class CSPMiddleware(csp.CSPMiddleware):
    """django-csp's, with each policy built once per settings value for the responses that change nothing of
    it (no view's own policy, no nonce read): django-csp builds the same two header values again for every
    response, CPU on every agent read. A response that does change its policy gets django-csp's own."""

    _built: dict[str, tuple[object, str]] = {}  # setting name: (its value, the policy built from it)

    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(
            hasattr(response, name) for name in PER_RESPONSE_POLICY
        ):
            return super().process_response(request, response)
        if response.status_code in (500, 404) and settings.DEBUG:
            return response  # Django's debug pages, as django-csp leaves them
        for header, setting, exempt in POLICIES:
            policy = self._policy(setting)
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if (
                policy
                and header not in response
                and getattr(response, exempt, False) is False
                and not request.path_info.startswith(tuple(prefixes))
            ):
                response[header] = policy
        # As django-csp does: a nonce asked for after the header was written is an error, not a silent gap.
        request.csp_nonce = csp.CheckableLazyObject(self._csp_nonce_post_response)
        return response

    def _policy(self, setting: str) -> str:
        """The policy of `setting` as django-csp builds it, rebuilt when the setting's value is another
        (override_settings)."""
        value = getattr(settings, setting, None)
        kept = self._built.get(setting)
        if kept is None or kept[0] is not value:
            kept = (value, build_policy(report_only=setting.endswith("_REPORT_ONLY")))
            self._built[setting] = kept
        return kept[1]
