"""The OpenAPI 3.1 description of the agent API, served at /api/v1/openapi.json and rendered at /api/v1/docs."""

from curation.api.http import NUMBER_PARAMETERS
from curation.rules import config
from curation.rules.access import SCOPE_MAX, SCOPE_PATTERN
from curation.rules.trust import Source, Trust
from curation.models import (
    CONTENT_MAX,
    SKILL_SLUG_MAX,
    SKILL_SLUG_PATTERN,
    TRIGGER_MAX,
    Evidence,
    Kind,
    Signal,
    SkillProposal,
)

SCOPE = {
    "type": "string",
    "pattern": SCOPE_PATTERN,
    "maxLength": SCOPE_MAX,
    "description": (
        "Segments of a-z, 0-9, '.', '_' and '-' joined by '/'; a segment neither is nor starts nor ends with "
        "'.'. No spaces, also none around it: a scope that does not match is refused (422), never trimmed."
    ),
    "example": "acme/billing-api",
}
SLUG = {
    "type": "string",
    "pattern": SKILL_SLUG_PATTERN,
    "maxLength": SKILL_SLUG_MAX,
    "example": "running-migrations-in-the-billing-api-container",
}


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    "description": "A key of the client's choosing (a UUID) to retry this request safely: a request with a key "
    "already used by this token is answered with the first answer (header Idempotent-Replayed: "
    f"true) and writes nothing, for {config.IDEMPOTENCY_KEEP_HOURS.value} hours. The same "
    "key with another body is a 422. A refused request (4xx) is not kept.",
}


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _nullable(schema: dict) -> dict:
    """A JSON body's optional parameter: null is read as left out, as the server reads it."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return {**schema, "type": [*types, "null"]}


def _body_parameter(name: str, schema: dict) -> dict:
    """A query parameter as a JSON body property: null is left out, and a number may come as text, as the
    server reads the body the way it reads a query string."""
    if name in NUMBER_PARAMETERS:
        return {"anyOf": [schema, {"type": "string", "description": "The number as text."}, {"type": "null"}]}
    return _nullable(schema)


def _json_body(ref: str, example: dict) -> dict:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": ref}, "example": example}}}


def _ok(description: str, ref: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


COMMON_ERRORS = {
    "401": _error("No token, or an unknown, revoked or expired one."),
    "429": _error("Rate limit reached; the Retry-After header says when to try again."),
}
BODY_ERRORS = {
    "400": _error("The body is not JSON, or not a JSON object."),
    "413": _error("The body is over 1 MiB."),
    "415": _error("The Content-Type is not application/json."),
    "422": _error("Some fields are not valid: one message per field in `errors`."),
}

EXAMPLE_CANDIDATE = {
    "scope": "acme/billing-api",
    "kind": "failure_lesson",
    "trigger": "Running the billing-api migrations in the container",
    "content": "Confirm the repository root with `git rev-parse --show-toplevel` before editing config.",
    "conditions": ["container", "migrations"],
    "boundary": "Not needed on the CI runners, which start in the repository root.",
    "signal": "external",
    "confidence": 0.8,
    "source_task": "task-1234",
    "evidence": [
        {
            "kind": "tool_output",
            "signal": "external",
            "polarity": "supports",
            "excerpt": "edited /srv/app/config.yml: file not found",
            "task_ref": "task-1234",
        }
    ],
}


VERSION = {
    "schema": {"type": "integer", "minimum": 1},
    "description": "Pin a published memory version for a whole task (default: the published one).",
}


TRUST_NAMES = [level.label for level in Trust]
TRUST_SOURCES = (
    "What kind of source this piece is; the server gives it its trust level. 'own' (default): your own "
    "observation or reasoning (the agent level; an independent agent's when the lesson is another agent's). "
    "'verification': a test or check result, with kind 'test_result' and the check named in 'evaluator' "
    "(the verified level; it confirms a lesson only when its author is another source). 'relayed': content "
    "from elsewhere, such as a web page, a fetched document, tool output you pass on, anything your MCP client "
    "marks external (untrusted; a lesson resting on it is untrusted). 'person': a person's decision, which "
    "an agent token may not claim (422); what a user told you is your own account of it ('own')."
)


def schema() -> dict:
    evidence_in = {
        "type": "object",
        "required": ["kind", "signal", "excerpt"],
        "additionalProperties": False,
        "properties": {
            "kind": {"enum": Evidence.EvidenceKind.values},
            "signal": {"enum": Signal.values},
            "source": {
                "enum": Source.values,
                "default": Source.OWN,
                "description": TRUST_SOURCES,
            },
            "polarity": {"enum": Evidence.Polarity.values, "default": "supports"},
            "excerpt": {"type": "string", "minLength": 1, "maxLength": 4000},
            "task_ref": {"type": "string", "maxLength": 255},
            "observed_at": {"type": "string", "format": "date-time"},
            "evaluator": {"type": "string", "maxLength": 100, "description": "The automatic evaluator that scored it."},
            "score": {
                "type": ["number", "null"],
                "description": "The evaluator's score; an `auto` admission policy approves at or above its threshold.",
            },
        },
    }
    candidate = {
        "type": "object",
        "required": ["scope", "kind", "trigger", "content", "signal"],
        "additionalProperties": False,
        "properties": {
            "scope": SCOPE,
            "kind": {"enum": Kind.values},
            "trigger": {"type": "string", "minLength": 1, "maxLength": TRIGGER_MAX, "description": "When it applies."},
            "content": {
                "type": "string",
                "minLength": 1,
                "maxLength": CONTENT_MAX,
                "description": "What to do or not do.",
            },
            "conditions": {"type": "array", "items": {"type": "string", "maxLength": 200}, "maxItems": 50},
            "boundary": {"type": "string", "maxLength": 2000, "description": "When it does NOT hold."},
            "recheck_when": {"type": "string", "maxLength": 2000},
            "review_by": {"type": ["string", "null"], "format": "date"},
            "signal": {"enum": Signal.values, "description": "Where the verdict came from."},
            "confidence": {
                "type": ["number", "null"],
                "minimum": 0,
                "maximum": 1,
                "description": f"Proposed; self-signal lessons are capped at {config.SELF_SIGNAL_CAP.value} "
                "without external evidence, human corrections start at "
                f"{config.HUMAN_CORRECTION_CONFIDENCE.value}.",
            },
            "source_task": {"type": "string", "maxLength": 255},
            "evidence": {"type": "array", "items": evidence_in},
            "embedding": {
                "type": ["array", "null"],
                "items": {"type": "number"},
                "description": "Your embedding of the lesson, for vector retrieval: one dimension per "
                "scope tree (the first one, or the setting), else 422.",
            },
        },
    }
    submission = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "status": {
                "enum": ["pending", "active", "rejected"],
                "description": "active or rejected when the scope's admission policy decided at once.",
            },
            "created": {
                "type": "boolean",
                "description": "false: an exact duplicate; its evidence went to `duplicate_of`.",
            },
            "duplicate_of": {"type": ["integer", "null"]},
            "evidence_added": {"type": "integer"},
            "confidence": {"type": "number", "description": "After the caps."},
            "duplicates": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "Near-duplicate active entries.",
            },
            "conflicts": {"type": "array", "items": {"type": "integer"}, "description": "Conflict records opened."},
            "flags": {"type": "array", "items": {"type": "object"}, "description": "What was redacted, and where."},
        },
    }
    entry = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "kind": {"enum": Kind.values},
            "scope": SCOPE,
            "trigger": {"type": "string"},
            "content": {"type": "string"},
            "conditions": {"type": "array", "items": {"type": "string"}},
            "boundary": {"type": "string"},
            "confidence": {"type": "number"},
            "signal": {"enum": Signal.values},
            "trust": {
                "enum": TRUST_NAMES,
                "description": "Provenance trust, from the lowest: untrusted, agent, independent, verified, person. "
                "It rises only when a source other than the lesson's author confirms it.",
            },
            "last_verified_at": {"type": ["string", "null"], "format": "date-time"},
            "score": {
                "type": "number",
                "description": "Relevance × confidence; with an embedding only, "
                "1 / (1 + distance); with both, their rank fusion × confidence.",
            },
            "distance": {"type": ["number", "null"], "description": "To the query's embedding, when it had one."},
        },
    }
    trials = {
        "type": "object",
        "description": "The trial runs reported on the skill's current revision (a change to its steps, parameters, "
        "verification or rollback starts a new revision, and its trials start again).",
        "properties": {
            "reported": {"type": "integer"},
            "succeeded": {"type": "integer"},
            "failed": {"type": "integer"},
            "required": {"type": "integer", "description": "Successful trials a lead needs to approve it."},
            "summary": {"type": "string", "example": f"3 of {config.SKILL_TRIALS_REQUIRED.value} trials succeeded"},
            "passes": {"type": "boolean", "description": "Enough trials, none of them failed."},
        },
    }
    skill = {
        "type": "object",
        "properties": {
            "slug": SLUG,
            "name": {"type": "string", "description": "The SKILL.md name: the slug."},
            "scope": SCOPE,
            "status": {"enum": SkillProposal.Status.values},
            "description": {"type": "string", "maxLength": 1024},
            "when_to_use": {"type": "string"},
            "steps": {"type": "string"},
            "parameters": {"type": "string"},
            "verification": {"type": "string"},
            "rollback": {"type": "string"},
            "pitfalls": {"type": "string"},
            "revision": {"type": "integer"},
            "sources": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "The entries it was curated from.",
            },
            "trust": {
                "enum": TRUST_NAMES,
                "description": "Provenance trust: the lowest level of its live sources (untrusted, agent, "
                "independent, verified, person); weigh its steps as you would a lesson at that level.",
            },
            "trials": trials,
            "approved_at": {"type": ["string", "null"], "format": "date-time"},
            "path": {"type": "string", "example": "skills/running-migrations-in-the-billing-api-container/SKILL.md"},
            "skill_md": {
                "type": "string",
                "description": "The file to write at `path`: YAML front matter (name, description), then the sections.",
            },
        },
    }
    trial_in = {
        "type": "object",
        "required": ["outcome", "task_ref"],
        "additionalProperties": False,
        "properties": {
            "outcome": {"enum": ["success", "failure"]},
            "task_ref": {
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "description": "The task the trial ran in; one trial per task and revision.",
            },
            "notes": {"type": "string", "maxLength": 4000},
        },
    }
    # The parameters of a retrieval: a GET's query string or a POST's JSON body.
    memory_parameters = {
        "scope": {"schema": SCOPE},
        "q": {
            "schema": {"type": "string", "maxLength": 2000},
            "description": "What the task is about: keywords or a sentence.",
        },
        "k": {
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": config.API_RETRIEVE_MAX_K.value,
                "default": config.RETRIEVE_LIMIT.value,
            }
        },
        "min_confidence": {
            "schema": {"type": "number", "minimum": 0, "maximum": 1, "default": config.RETRIEVE_AT_LEAST.value},
            "description": f"Raised to {config.RETRIEVE_AT_LEAST.value} if lower.",
        },
        "min_trust": {
            "schema": {"enum": TRUST_NAMES, "default": Trust.UNTRUSTED.label},
            "description": "Only lessons at this provenance trust level or above (untrusted, agent, independent, "
            "verified, person): `independent` leaves out what rests on one agent's word or on relayed content.",
        },
        "budget_chars": {"schema": {"type": "integer", "minimum": 200, "maximum": 50000, "default": 2000}},
        "task_ref": {
            "schema": {"type": "string"},
            "description": "Your task's reference, for /feedback and the holdout; kept, once secrets are "
            "redacted, to its first 255 characters.",
        },
        "version": VERSION,
        "embedding": {
            "schema": {"type": ["array", "string"], "items": {"type": "number"}},
            "description": "Your embedding of the query (in a query string: numbers joined by commas). "
            "Alone: nearest first; with q: reciprocal-rank fusion of both × confidence. "
            "Exact search over the scope's entries.",
        },
        "metric": {"schema": {"enum": ["l2", "cosine"], "default": "l2"}},
    }
    retrieval = (
        "Entries of the published memory version (or the pinned `version`), of the scope and its "
        "ancestors (within the token's scopes), at "
        f"confidence {config.RETRIEVE_AT_LEAST.value} or more, ranked by relevance × confidence, "
        "near-duplicates dropped. The retrieval is recorded; report its outcome to /feedback."
    )
    memory_responses = {
        "200": _ok("The entries and the context block.", "#/components/schemas/Memory"),
        "403": _error("The scope is outside the token's scopes."),
        "404": _error("No such memory version."),
        "422": _error("A parameter is not valid."),
        **COMMON_ERRORS,
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memoryadmin agent API",
            "version": "1",
            "description": "Submit candidate lessons, read curated memory for your scopes, report outcomes. "
            "Every call sends `Authorization: Bearer <token>`; a token reads and writes only "
            "its scopes. Ids outside them answer 404.",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {"type": "string"},
                        "errors": {
                            "type": "object",
                            "additionalProperties": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
                "Candidate": candidate,
                "Evidence": evidence_in,
                "Submission": submission,
                "Batch": {
                    "type": "object",
                    "required": ["candidates"],
                    "additionalProperties": False,
                    "properties": {
                        "candidates": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": config.API_BATCH_MAX.value,
                            # Items are checked one by one, not at the batch level: one that is not a valid
                            # Candidate is refused in its own result of the 200 answer, the others go on.
                            "items": {
                                "anyOf": [{"$ref": "#/components/schemas/Candidate"}, {}],
                                "description": "A Candidate. The batch does not refuse an item that is not a "
                                "valid one: that item's result says ok=false with its status (422, 403) and "
                                "errors, and the other items are written.",
                            },
                        }
                    },
                },
                "BatchResult": {
                    "type": "object",
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "description": "In order: {index, ok: true, ...Submission} or {index, ok: false, status, errors}.",
                            },
                        },
                        "created": {"type": "integer"},
                        "duplicates": {"type": "integer"},
                        "failed": {"type": "integer"},
                    },
                },
                "Entry": entry,
                "MemoryQuery": {
                    "type": "object",
                    "required": ["scope"],
                    "additionalProperties": False,
                    "properties": {
                        name: {
                            **(spec["schema"] if name == "scope" else _body_parameter(name, spec["schema"])),
                            **({"description": spec["description"]} if "description" in spec else {}),
                        }
                        for name, spec in memory_parameters.items()
                    },
                },
                "Memory": {
                    "type": "object",
                    "properties": {
                        "retrieval_id": {"type": "string", "format": "uuid"},
                        "memory_version": {"type": "integer", "description": "The published version the answer read."},
                        "arm": {
                            "enum": ["memory", "holdout", "rules-only"],
                            "description": "holdout: this task is in the holdout (no memory: no entries and an "
                            "empty context), to measure whether memory helps; rules-only: it is "
                            "served only human corrections and preferences. Log it with the task.",
                        },
                        "scope": SCOPE,
                        "min_confidence": {"type": "number"},
                        "min_trust": {"enum": TRUST_NAMES},
                        "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
                        "context": {"type": "string", "description": "Ready to put in a prompt; at most budget_chars."},
                    },
                },
                "Feedback": {
                    "type": "object",
                    "required": ["retrieval_id", "outcome"],
                    "additionalProperties": False,
                    "properties": {
                        "retrieval_id": {"type": "string", "format": "uuid"},
                        "outcome": {"enum": ["success", "failure"]},
                        "utility": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                        "used": {
                            "type": "array",
                            "items": {"type": "integer"},
                            "description": "The lessons the agent applied: only these are "
                            "credited or charged. Default: every entry of the "
                            "retrieval, each with an equal share.",
                        },
                    },
                },
                "FeedbackResult": {
                    "type": "object",
                    "properties": {
                        "recorded": {"type": "boolean", "description": "false: already recorded, nothing changed."},
                        "outcome": {"type": "string"},
                        "arm": {"enum": ["memory", "holdout", "rules-only"]},
                        "entries": {"type": "array", "items": {"type": "object"}},
                    },
                },
                "EntryDetail": {
                    "type": "object",
                    "description": "The entry with status, counters, evidence and events; `trust` and "
                    "`trust_why` say its provenance trust level and why, and each piece of evidence its "
                    "`source` and `trust`.",
                },
                "Skill": skill,
                "Skills": {
                    "type": "object",
                    "properties": {
                        "skills": {"type": "array", "items": {"$ref": "#/components/schemas/Skill"}},
                        "next_after": {"type": ["string", "null"], "description": "Pass as `after` for the next page."},
                    },
                },
                "MemoryTestRun": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "scope": {**_nullable(SCOPE), "description": "Left out or null: all the token's scopes."},
                        "version": {
                            **_body_parameter("version", VERSION["schema"]),
                            "description": "Left out or null: the published one.",
                        },
                    },
                },
                "MemoryTestResults": {
                    "type": "object",
                    "properties": {
                        "memory_version": {"type": "integer", "description": "The version the tests ran on."},
                        "passed": {"type": "integer"},
                        "failed": {"type": "integer"},
                        "results": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "memory_test": {"type": "integer"},
                                    "name": {"type": "string"},
                                    "scope": SCOPE,
                                    "version": {"type": ["integer", "null"]},
                                    "passed": {"type": "boolean"},
                                    "failures": {
                                        "type": "array",
                                        "items": {"type": "string"},
                                        "description": "What the answer breaks, in words; empty when it passed.",
                                    },
                                    "received": {
                                        "type": "array",
                                        "items": {"type": "integer"},
                                        "description": "The entries the answer holds, in rank order.",
                                    },
                                    "tokens": {"type": "integer", "description": "The context block's size."},
                                },
                            },
                        },
                    },
                },
                "Trial": trial_in,
                "TrialResult": {
                    "type": "object",
                    "properties": {
                        "recorded": {
                            "type": "boolean",
                            "description": "false: this task's trial was already reported.",
                        },
                        "trial": {"type": "object"},
                        "skill": SLUG,
                        "revision": {"type": "integer"},
                        "trials": trials,
                    },
                },
            },
        },
        "paths": {
            "/token": {
                "get": {
                    "summary": "This token's label, scopes and expiry",
                    "responses": {
                        "200": {
                            "description": "The token.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "label": {"type": "string"},
                                            "scopes": {"type": "array", "items": SCOPE},
                                            "expires_at": {"type": ["string", "null"], "format": "date-time"},
                                        },
                                    }
                                }
                            },
                        },
                        **COMMON_ERRORS,
                    },
                }
            },
            "/candidates": {
                "post": {
                    "summary": "Submit one candidate lesson",
                    "description": "Secrets and personal data are redacted before storage and flagged. An exact "
                    "duplicate of an active (or pending) entry creates nothing: its evidence is added. "
                    "A lesson that repeats a forgotten one is answered as any new candidate and never "
                    "reaches a reviewer or an agent.",
                    "parameters": [IDEMPOTENCY_KEY],
                    "requestBody": _json_body("#/components/schemas/Candidate", EXAMPLE_CANDIDATE),
                    "responses": {
                        "201": _ok("Created, or added to its duplicate.", "#/components/schemas/Submission"),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                        "403": _error("The scope is outside the token's scopes."),
                    },
                }
            },
            "/candidates/batch": {
                "post": {
                    "summary": f"Submit up to {config.API_BATCH_MAX.value} candidates",
                    "description": "One result per item, in order; one bad item never blocks the others. Text no "
                    "database stores (a NUL character, a lone surrogate) anywhere in the body refuses "
                    "the whole request with a 422 naming the item's field, e.g. candidates[3].trigger.",
                    "parameters": [IDEMPOTENCY_KEY],
                    "requestBody": _json_body("#/components/schemas/Batch", {"candidates": [EXAMPLE_CANDIDATE]}),
                    "responses": {
                        "200": _ok("One result per candidate.", "#/components/schemas/BatchResult"),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
            "/memory": {
                "get": {
                    "summary": "Retrieve curated memory for a scope",
                    "description": retrieval + " The query string lands in access logs: prefer POST /memory/search.",
                    "parameters": [
                        {"name": name, "in": "query", **({"required": True} if name == "scope" else {}), **spec}
                        for name, spec in memory_parameters.items()
                    ],
                    "responses": memory_responses,
                }
            },
            "/memory/search": {
                "post": {
                    "summary": "Retrieve curated memory for a scope, the parameters in a JSON body",
                    "description": retrieval + " The same parameters, answer and errors as GET /memory; the query "
                    "and the task reference stay out of URLs and access logs.",
                    "requestBody": _json_body(
                        "#/components/schemas/MemoryQuery",
                        {
                            "scope": "acme/billing-api",
                            "q": "webhook signing key rotation",
                            "k": 3,
                            "task_ref": "task-1234",
                        },
                    ),
                    "responses": {
                        **memory_responses,
                        "400": BODY_ERRORS["400"],
                        "413": BODY_ERRORS["413"],
                        "415": BODY_ERRORS["415"],
                    },
                }
            },
            "/feedback": {
                "post": {
                    "summary": "Report the outcome of a task that used a retrieval",
                    "description": (
                        "Each lesson charged (those in `used`, or every one returned, each with an equal share, when "
                        "`used` is left out) is judged against comparable tasks without it: its confidence moves with "
                        "its share of the change in its estimated lift; a lift above zero at 95% verifies it, one "
                        "below zero at 95% sends it to the candidates queue for a recheck. Each entry's `lift` in the "
                        "answer gives the figures. Once per retrieval."
                        if config.OUTCOME_RULE.value == "lift"
                        else f"Success: +{config.SUCCESS_STEP.value} and re-verified. Failure: -{config.FAILURE_STEP.value} and the entry "
                        "goes back to the candidates queue for a recheck. Once per retrieval."
                    ),
                    "requestBody": _json_body(
                        "#/components/schemas/Feedback",
                        {"retrieval_id": "6f1c...", "outcome": "success", "utility": 0.9},
                    ),
                    "responses": {
                        "200": _ok("Applied, or already recorded.", "#/components/schemas/FeedbackResult"),
                        "404": _error("No such retrieval for this token."),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
            "/evaluation": {
                "get": {
                    "summary": "Is memory helping: the holdout comparison under a scope",
                    "description": "Reported task outcomes of the memory and holdout arms under `scope` (rolled up "
                    "from every scope below it, within the token's scopes): success rates with Wilson "
                    "95% intervals, the difference with its interval and a verdict over 7, 30 and 90 "
                    "days; weekly rates and human corrections; the lessons that help or hurt and the "
                    "recurring failures over `days`.",
                    "parameters": [
                        {"name": "scope", "in": "query", "required": True, "schema": SCOPE},
                        {"name": "days", "in": "query", "schema": {"enum": [7, 30, 90], "default": 30}},
                    ],
                    "responses": {
                        "200": {"description": "{scope, windows, scopes, weekly, lessons, recurring_failures}."},
                        "403": _error("The scope is outside the token's scopes."),
                        "422": _error("No scope, or days not 7, 30 or 90."),
                        **COMMON_ERRORS,
                    },
                }
            },
            "/entries/{id}": {
                "get": {
                    "summary": "One entry with its evidence and events",
                    "description": "Agents read curated memory: of a candidate still under review or rejected, its state "
                    "and history without its text or its evidence's text (empty strings).",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                    "responses": {
                        "200": _ok("The entry.", "#/components/schemas/EntryDetail"),
                        "404": _error("No such entry in this token's scopes."),
                        **COMMON_ERRORS,
                    },
                }
            },
            "/export": {
                "get": {
                    "summary": "The files coding agents load at start-up",
                    "description": "The published memory version (or `version`) as files, of the token's scopes only "
                    "(under `scope` when given): `MEMORY.md` (an index of at most 200 lines and 25 KB), "
                    "one topic file per scope with each lesson's trigger, what to do, when it does not "
                    "hold, its trust level and entry id, and `skills/<name>/SKILL.md`. An unchanged "
                    "version answers the same files.",
                    "parameters": [
                        {"name": "scope", "in": "query", "schema": SCOPE},
                        {"name": "version", "in": "query", **VERSION},
                    ],
                    "responses": {
                        "200": {"description": "{memory_version, scope, files: {path: text}}."},
                        "403": _error("The scope is outside the token's scopes."),
                        "404": _error("No such memory version."),
                        "422": _error("A parameter is not valid."),
                        **COMMON_ERRORS,
                    },
                }
            },
            "/skills": {
                "get": {
                    "summary": "Approved skills for a scope",
                    "description": "Skills a lead approved (enough hits, high utility, "
                    f"{config.SKILL_TRIALS_REQUIRED.value} successful trial runs, a rollback path), of the scope and "
                    "its ancestors within the token's scopes; without `scope`, of every scope of the token. "
                    "While a skill is approved, its source entries are no longer returned by /memory. "
                    "Write each `skill_md` to `<skills dir>/<slug>/SKILL.md`.",
                    "parameters": [
                        {"name": "scope", "in": "query", "schema": SCOPE},
                        {"name": "version", "in": "query", **VERSION},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 100},
                        },
                        {
                            "name": "after",
                            "in": "query",
                            "schema": SLUG,
                            "description": "The previous page's `next_after`: the name (slug) of the last skill on "
                            "that page; this page starts after it. Anything else, an empty value included, is a 422.",
                        },
                    ],
                    "responses": {
                        "200": _ok("The skills, by name.", "#/components/schemas/Skills"),
                        "403": _error("The scope is outside the token's scopes."),
                        "404": _error("No such memory version."),
                        "422": _error("A parameter is not valid."),
                        **COMMON_ERRORS,
                    },
                }
            },
            "/skills/{slug}": {
                "get": {
                    "summary": "One skill, in any state",
                    "description": "A nominated skill is a draft under review: run it as written and report the trial.",
                    "parameters": [{"name": "slug", "in": "path", "required": True, "schema": SLUG}],
                    "responses": {
                        "200": _ok("The skill.", "#/components/schemas/Skill"),
                        "404": _error("No such skill in this token's scopes."),
                        **COMMON_ERRORS,
                    },
                }
            },
            "/skills/{slug}/trials": {
                "post": {
                    "summary": "Report a trial run of a nominated skill",
                    "description": "Counted for the skill's current revision, once per task_ref: a repeat changes nothing "
                    f"and answers 200. A lead may approve the skill after {config.SKILL_TRIALS_REQUIRED.value} "
                    "trials of one revision, all successful.",
                    "parameters": [{"name": "slug", "in": "path", "required": True, "schema": SLUG}],
                    "requestBody": _json_body(
                        "#/components/schemas/Trial",
                        {
                            "outcome": "success",
                            "task_ref": "task-2417",
                            "notes": "migrated 3 tables, showmigrations clean",
                        },
                    ),
                    "responses": {
                        "201": _ok("Recorded, with the trials so far.", "#/components/schemas/TrialResult"),
                        "200": _ok(
                            "Already recorded for this task; nothing changed.", "#/components/schemas/TrialResult"
                        ),
                        "404": _error("No such skill in this token's scopes."),
                        "409": _error("The skill is not nominated (already approved, rejected or retired)."),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
            "/forget-requests": {
                "post": {
                    "summary": "Ask a lead to forget a lesson, for a user's explicit request",
                    "description": "Name an entry of the token's scopes (`entry_id`), or a text to match (`text`) in a "
                    "`scope` of the token, with the user's `reason`. A lead approves or declines in the "
                    "console's Forget queue; approval retires the lesson, purges its text everywhere and "
                    "keeps it from being learned again. The reason is purged with the lesson: say who "
                    "asked and why, without pasting the lesson's text.",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "example": {
                                    "entry_id": 42,
                                    "reason": "The user asked to forget what they said about their colleague.",
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": {"description": "{id, state: open, entry_id, scope}: the request waits for a lead."},
                        "403": _error("The scope is outside the token's scopes."),
                        "404": _error("No such entry in this token's scopes."),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
            "/memory-tests/run": {
                "post": {
                    "summary": "Run the memory tests of this token's scopes",
                    "description": "Each active memory test under the token's scopes (under `scope` when given) asks "
                    "its query of the published version (or the pinned `version`), ranked as /memory ranks, and "
                    "checks what the answer must and must not hold. Leads keep the tests in the console; a "
                    "publish runs them too. Each result is recorded in the test's history.",
                    "requestBody": _json_body("#/components/schemas/MemoryTestRun", {"scope": "acme/billing-api"}),
                    "responses": {
                        "200": _ok("One result per test.", "#/components/schemas/MemoryTestResults"),
                        "403": _error("The scope is outside the token's scopes."),
                        "404": _error("No such memory version."),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
            "/entries/{id}/evidence": {
                "post": {
                    "summary": "Add fresh evidence to an entry",
                    "description": "Supporting external or independent evidence lets an archived entry be revived. "
                    "A piece from a token other than the lesson's author is an independent confirmation: at a "
                    "higher trust level than the lesson's, it raises the lesson's trust (see `source`).",
                    "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                    "requestBody": _json_body("#/components/schemas/Evidence", EXAMPLE_CANDIDATE["evidence"][0]),
                    "responses": {
                        "201": {"description": "Recorded."},
                        "404": _error("No such entry in this token's scopes."),
                        **BODY_ERRORS,
                        **COMMON_ERRORS,
                    },
                }
            },
        },
    }
