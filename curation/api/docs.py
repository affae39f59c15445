"""The served OpenAPI schema and a readable page made from it (no CDN: rendered on the server)."""

import json

from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .openapi import schema
from .schema_tables import body_schema, field_rows, meaning, type_in_words


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
            request_schema = body_schema(op.get("requestBody", {}))
            operations.append(
                {
                    "method": method.upper(),
                    "path": spec["servers"][0]["url"] + path,
                    "summary": op["summary"],
                    "description": op.get("description", ""),
                    "parameters": [
                        {
                            **p,
                            "type": type_in_words(p.get("schema", {}), spec),
                            "meaning": " ".join(filter(None, [p.get("description", ""), meaning(p.get("schema", {}))])),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "request_fields": field_rows(request_schema, spec) if request_schema else [],
                    "example": json.dumps(body["example"], indent=2) if "example" in body else "",
                    "responses": [
                        {
                            "code": code,
                            "description": answer["description"],
                            "fields": field_rows(body_schema(answer), spec) if body_schema(answer) else [],
                        }
                        for code, answer in sorted(op["responses"].items())
                    ],
                }
            )
    return render(request, "curation/api_docs.html", {"info": spec["info"], "operations": operations})
