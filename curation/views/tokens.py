"""Agent tokens in the console: leads list, create (the secret is shown once) and revoke them. No page
here may be kept by a browser's or a proxy's cache: one of them carries a secret."""

import re

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from curation.rules import clock
from curation.models import AgentToken
from curation.rules.permissions import MANAGE_TOKENS, require
from curation.selectors.tokens import agent_tokens
from curation.services.tokens import create_agent_token, parse_duration, revoke_agent_token


def _render(request, *, form=None, errors=None, new_key=None, new_token=None, status=200):
    return render(
        request,
        "curation/tokens.html",
        {
            "tokens": agent_tokens(request.user),
            "now": clock.now(),
            "form": form or {},
            "errors": errors or {},
            "new_key": new_key,
            "new_token": new_token,
        },
        status=status,
    )


@require_GET
@never_cache
@require(MANAGE_TOKENS)
def token_list(request):
    return _render(request)


@require_POST
@never_cache
@require(MANAGE_TOKENS)
def token_create(request):
    form = {k: request.POST.get(k, "") for k in ("name", "scopes", "expires")}
    scopes = [s.strip() for s in re.split(r"[,\s]+", form["scopes"]) if s.strip()]
    try:
        expires_in = parse_duration(form["expires"]) if form["expires"].strip() else None
        token, key = create_agent_token(name=form["name"], scopes=scopes, expires_in=expires_in, actor=request.user)
    except ValidationError as exc:
        return _render(request, form=form, errors=exc.message_dict, status=422)
    # The secret is in this one answer and nowhere else: not in a redirect, a message, the session or a cache.
    return _render(request, new_key=key, new_token=token, status=201)


@require_POST
@never_cache
@require(MANAGE_TOKENS)
def token_revoke(request, token_id):
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Nothing revoked: confirm with the token's “Revoke … now” button.")
        return redirect("curation:tokens")
    try:
        token = revoke_agent_token(token_id, actor=request.user)
    except AgentToken.DoesNotExist:
        raise Http404("No such agent token.") from None
    messages.success(request, f"Revoked “{token.name}” ({token.key_prefix}…): agents using it now get 401.")
    return redirect("curation:tokens")
