"""``/api/docs``: the API's reference rendered on the server from ``app.openapi()`` (no
JavaScript, nothing from other hosts), one section per operation. Descriptions are CommonMark
in OpenAPI; of it the page renders code spans (text between single or, as in the routes'
docstrings, double backticks), the rest shown as written."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from markupsafe import Markup, escape

from rlbench_suite.leaderboard.pages import page, render
from rlbench_suite.leaderboard.query_params import known_query_params

router = APIRouter(include_in_schema=False, dependencies=[Depends(known_query_params)])
METHODS = ("get", "post", "put", "patch", "delete")
CONSTRAINTS = ("minimum", "maximum", "minLength", "maxLength", "format", "default")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
"""A CommonMark code span: a run of backticks, the code, the same run of backticks."""


def code_spans(text: str) -> Markup:
    """``text`` escaped, its code spans as ``<code>`` elements."""
    escaped = str(escape(text))  # escaping leaves backticks as they are
    return Markup(CODE_SPAN.sub(lambda m: f"<code>{m.group(2).strip()}</code>", escaped))


def schema_text(schema: dict[str, Any]) -> str:
    """A JSON schema in a few words: ``integer (minimum 1, maximum 500, default 50)``."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        kinds = [schema_text(s) for s in schema["anyOf"]]
        text = " or ".join(dict.fromkeys(kinds))
    elif schema.get("type") == "array":
        text = f"array of {schema_text(schema.get('items', {}))}"
    elif isinstance(schema.get("type"), list):
        text = " or ".join(schema["type"])
    else:
        text = schema.get("type", "any")
    limits = [f"{key} {schema[key]}" for key in CONSTRAINTS if key in schema]
    return f"{text} ({', '.join(limits)})" if limits else text


def _body(operation: dict[str, Any]) -> list[dict[str, Any]]:
    content = operation.get("requestBody", {}).get("content", {})
    bodies = []
    for media_type, entry in content.items():
        schema = entry.get("schema", {})
        fields = [
            {
                "name": name,
                "type": schema_text(field),
                "required": name in schema.get("required", ()),
                "description": code_spans(field.get("description", "")),
            }
            for name, field in schema.get("properties", {}).items()
        ]
        bodies.append(
            {
                "media_type": media_type,
                "type": schema_text(schema),
                "description": code_spans(schema.get("description", "")),
                "fields": fields,
            }
        )
    return bodies


def operations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every operation of the OpenAPI document ``spec``, in its order, flattened for a page."""
    found = []
    for path, item in spec.get("paths", {}).items():
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            found.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "anchor": f"{method}-{path}".replace("/", "-").strip("-"),
                    "summary": code_spans(op.get("summary", "")),
                    "description": code_spans(op.get("description", "")),
                    "parameters": [
                        {
                            "name": p["name"],
                            "in": p["in"],
                            "required": p.get("required", False),
                            "type": schema_text(p.get("schema", {})),
                            "description": code_spans(p.get("description", "")),
                        }
                        for p in op.get("parameters", [])
                    ],
                    "body": _body(op),
                    "responses": [
                        {
                            "status": status,
                            "description": code_spans(r.get("description", "")),
                            "media_types": list(r.get("content", {})),
                        }
                        for status, r in op.get("responses", {}).items()
                    ],
                }
            )
    return found


@page(router, "/api/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    spec = request.app.openapi()
    info = {**spec["info"], "description": code_spans(spec["info"].get("description", ""))}
    return render(
        request, "api_docs.html", info=info, openapi=spec["openapi"], operations=operations(spec)
    )


@router.get("/openapi.json", include_in_schema=False)
def openapi_where_it_is() -> RedirectResponse:
    """The OpenAPI document lives at ``/api/openapi.json`` (beside the API it describes); the
    usual ``/openapi.json`` redirects there."""
    return RedirectResponse("/api/openapi.json", status_code=308)
