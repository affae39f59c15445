"""The served OpenAPI schema and a readable page made from it (no CDN: rendered on the server)."""

import json

from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .openapi import schema


@require_GET
def openapi_json(request):
    return JsonResponse(schema(), json_dumps_params={"indent": 2})


@require_GET
def docs_page(request):
    spec = schema()
    operations = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            operations.append({
                "method": method.upper(),
                "path": spec["servers"][0]["url"] + path,
                "summary": op["summary"],
                "description": op.get("description", ""),
                "parameters": op.get("parameters", []),
                "example": json.dumps(body["example"], indent=2) if "example" in body else "",
                "responses": sorted((code, r["description"]) for code, r in op["responses"].items()),
            })
    return render(request, "curation/api_docs.html", {"info": spec["info"], "operations": operations})
