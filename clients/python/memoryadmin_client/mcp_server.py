"""The memoryadmin MCP server: its tools and resources, defined once for both transports.

`build_server(client_for)` makes an MCP server (the official SDK's low-level `Server`) whose every tool
and resource is one call of the agent API through an `AsyncMemoryAdmin`. `client_for(ctx)` gives that
client for a request: over stdio one client with the token of the environment (`stdio.py`); over
Streamable HTTP, inside memoryadmin, a client that sends the caller's own bearer token to the API in the
same process (`curation/api/mcp_http.py`). So the server sees and changes exactly what the token could
through the API, and every input is validated by the API's own rules; a refusal comes back as a tool
error naming the fields to fix. Nothing here logs a token, a query or any argument."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import x_mcp_header_map
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .client import AsyncMemoryAdmin
from .errors import MemoryAdminError

__all__ = ["ClientFor", "TOOLS", "build_server", "memory_uri", "skill_uri"]

ClientFor = Callable[[ServerRequestContext[Any]], AbstractAsyncContextManager[AsyncMemoryAdmin]]

SERVER_NAME = "memoryadmin"
INSTRUCTIONS = (
    "memoryadmin holds lessons that people reviewed. Before a task, call search_memory with the task's scope "
    "and a short description of the task, and follow the context block it returns. After the task, call "
    "report_outcome with the retrieval_id. When you learn something worth keeping (a failure and its fix, "
    "a procedure that worked), call submit_lesson with evidence; a person reviews it before other agents see it."
)
MEMORY_BUDGET_CHARS = 50000  # the most of a scope's memory one resource read gives
Outcome = Literal["success", "failure"]
KindName = Literal["procedure", "failure_lesson", "success_pattern", "human_correction", "preference", "fact"]
SignalName = Literal["self", "independent", "external"]
EvidenceKindName = Literal["tool_output", "test_result", "user_statement", "review", "task_outcome", "reflection"]
SourceName = Literal["own", "verification", "relayed"]
TrustName = Literal["untrusted", "agent", "independent", "verified", "person"]
SOURCE_HELP = (
    "What kind of source it is; the server decides its trust level from it. 'own' (default): your own "
    "observation or reasoning. 'verification': a test or check result (kind 'test_result', naming the "
    "check in 'evaluator'). 'relayed': content from elsewhere (a web page, a fetched document, tool output "
    "you pass on, anything your client marks external): untrusted, and so is a lesson resting on it. An agent "
    "cannot speak for a person: what a user told you is your own account ('own')."
)


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchMemory(_Arguments):
    scope: str = Field(
        description="The scope of the task, e.g. 'acme/billing-api'. Lessons of its parent "
        "scopes that the token covers are included."
    )
    query: str = Field(
        "",
        description="What the task is about, in a few words (at most 2,000 characters). "
        "Empty: the most trusted lessons of the scope.",
    )
    k: int | None = Field(None, description="How many lessons at most (1 to 20; default 5).")
    budget_chars: int | None = Field(
        None, description="The longest context block to return, in characters (200 to 50,000; default 2,000)."
    )
    task_ref: str | None = Field(
        None,
        description="Your task's id, to trace which task used which lessons; every call with the same id is served from the same arm (memory, or the holdout that gets none).",
    )
    embedding: list[float] | None = Field(
        None,
        description="Your own embedding of the task, from the model that "
        "embedded the lessons (one dimension per scope tree): "
        "the nearest lessons first, or fused with the query's "
        "words when there is a query; each lesson then "
        "carries its distance.",
    )
    metric: Literal["l2", "cosine"] | None = Field(
        None, description="How the embedding is compared: 'l2' (default) or 'cosine'."
    )
    min_trust: TrustName | None = Field(
        None,
        description="Only lessons at this provenance trust level or above, from the lowest: untrusted, agent, "
        "independent (confirmed by another agent), verified (by a test or check), person. Default: all.",
    )


class EvidenceItem(_Arguments):
    kind: EvidenceKindName = Field(description="What the evidence is.")
    excerpt: str = Field(description="The observation itself: an error message, a test result, what the user said.")
    signal: SignalName = Field(
        description="Who produced it: 'external' (a tool, a test, a person), 'independent' (another agent) or 'self'."
    )
    source: SourceName | None = Field(None, description=SOURCE_HELP)
    evaluator: str | None = Field(
        None, description="The check or evaluator that produced it (a verification names it)."
    )
    polarity: Literal["supports", "contradicts"] | None = Field(None, description="Default 'supports'.")
    task_ref: str | None = Field(None, description="The task it was observed in.")
    observed_at: str | None = Field(None, description="When, as an ISO 8601 time.")


class SubmitLesson(_Arguments):
    scope: str = Field(description="The narrowest scope the lesson holds for, e.g. 'acme/billing-api'.")
    kind: KindName = Field(
        description="procedure, failure_lesson (what went wrong and how to avoid it), "
        "success_pattern, human_correction, preference or fact."
    )
    trigger: str = Field(description="When the lesson applies: the situation an agent will be in.")
    content: str = Field(description="The lesson: what to do or avoid, specific enough to act on.")
    signal: SignalName = Field(
        description="Where the lesson's evidence comes from: 'external' (a tool, a test, "
        "a person) weighs most, then 'independent' (another agent), then 'self'."
    )
    conditions: list[str] | None = Field(None, description="Conditions that must hold for the lesson to apply.")
    boundary: str | None = Field(None, description="Where the lesson stops holding (a version, a platform).")
    source_task: str | None = Field(None, description="The task you learned it in.")
    evidence: list[EvidenceItem] | None = Field(None, description="What shows the lesson is true.")
    embedding: list[float] | None = Field(
        None,
        description="Your own embedding of the lesson, for search_memory by embedding (one dimension per scope tree).",
    )


class ReportOutcome(_Arguments):
    retrieval_id: str = Field(description="The retrieval_id search_memory returned for this task.")
    outcome: Outcome = Field(description="How the task went.")
    utility: float | None = Field(None, description="How useful the lessons were, from 0 to 1.")
    used: list[int] | None = Field(
        None,
        description="The ids of the lessons you actually applied. Say it whenever "
        "you know: only those are credited or charged with this outcome. Left out, "
        "every lesson returned shares it, so a lesson you ignored is judged by a task "
        "it had no part in.",
    )


class AddEvidence(_Arguments):
    entry_id: int = Field(description="The id of the lesson (an entry id from search_memory or submit_lesson).")
    kind: EvidenceKindName = Field(description="What the evidence is.")
    excerpt: str = Field(description="The observation itself.")
    signal: SignalName = Field(description="Who produced it: 'external', 'independent' or 'self'.")
    source: SourceName | None = Field(None, description=SOURCE_HELP)
    evaluator: str | None = Field(
        None, description="The check or evaluator that produced it (a verification names it)."
    )
    polarity: Literal["supports", "contradicts"] | None = Field(
        None, description="'contradicts' when it shows the lesson is wrong."
    )
    task_ref: str | None = Field(None, description="The task it was observed in.")


class RequestForget(_Arguments):
    reason: str = Field(
        description="Who asked and why (e.g. 'the user asked to forget their address'), without "
        "the lesson's text: the reason is purged with the lesson."
    )
    entry_id: int | None = Field(None, description="The lesson to forget (an entry id from search_memory).")
    text: str | None = Field(None, description="Or: the text of the lessons to forget, matched in `scope`.")
    scope: str | None = Field(None, description="With `text`: the scope the lessons are in.")


class ListSkills(_Arguments):
    scope: str | None = Field(
        None, description="Only the skills of this scope and its parents; default: every scope of the token."
    )


class GetSkill(_Arguments):
    name: str = Field(description="The skill's name, as list_skills gives it.")


class ReportSkillTrial(_Arguments):
    name: str = Field(description="The nominated skill's name.")
    outcome: Outcome = Field(description="How the trial run went.")
    task_ref: str = Field(description="The task the trial ran in; one report per task.")
    notes: str | None = Field(None, description="What happened, briefly.")


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


async def _search_memory(api: AsyncMemoryAdmin, a: SearchMemory) -> tuple[str, dict]:
    answer = await api.search_memory(
        a.scope,
        a.query,
        k=a.k,
        budget_chars=a.budget_chars,
        task_ref=a.task_ref,
        embedding=a.embedding,
        metric=a.metric,
        min_trust=a.min_trust,
    )
    arm = answer.get("arm", "memory")
    result = {
        "retrieval_id": answer["retrieval_id"],
        "arm": arm,
        "entry_ids": [e["id"] for e in answer["entries"]],
        "context": answer["context"],
        "entries": answer["entries"],
    }
    if arm == "holdout":
        found = (
            "This task is in the holdout that measures whether memory helps: no lessons are given for it. "
            "Work without them, and report the outcome as usual."
        )
    else:
        found = answer["context"] or "No reviewed lessons match."
    text = (
        f"{found}\n\nretrieval_id: {answer['retrieval_id']} (report the task's outcome with it); "
        f"arm: {arm}; entry ids: {result['entry_ids']}"
    )
    return text, result


async def _submit_lesson(api: AsyncMemoryAdmin, a: SubmitLesson) -> tuple[str, dict]:
    fields = a.model_dump(exclude_none=True)
    answer = await api.submit_candidate(**fields)
    return _text(answer), answer


async def _report_outcome(api: AsyncMemoryAdmin, a: ReportOutcome) -> tuple[str, dict]:
    answer = await api.report_outcome(a.retrieval_id, a.outcome, utility=a.utility, used=a.used)
    return _text(answer), answer


async def _add_evidence(api: AsyncMemoryAdmin, a: AddEvidence) -> tuple[str, dict]:
    answer = await api.add_evidence(**a.model_dump(exclude_none=True))
    return _text(answer), answer


async def _request_forget(api: AsyncMemoryAdmin, a: RequestForget) -> tuple[str, dict]:
    answer = await api.request_forget(**a.model_dump(exclude_none=True))
    return (
        f"Forget request #{answer['id']} filed: a lead decides; once approved the lesson's text is purged "
        f"everywhere and it is not learned again."
    ), answer


async def _list_skills(api: AsyncMemoryAdmin, a: ListSkills) -> tuple[str, dict]:
    skills = [
        {
            "name": s["slug"],
            "scope": s["scope"],
            "description": s["description"],
            "when_to_use": s["when_to_use"],
            "trust": s.get("trust"),  # the lowest provenance trust of its sources
        }
        for s in await _all_skills(api, a.scope)
    ]
    return _text(skills), {"skills": skills}


async def _get_skill(api: AsyncMemoryAdmin, a: GetSkill) -> tuple[str, dict]:
    skill = await api.get_skill(a.name)
    return skill["skill_md"], {
        "name": skill["slug"],
        "status": skill["status"],
        "trust": skill.get("trust"),
        "skill_md": skill["skill_md"],
    }


async def _report_skill_trial(api: AsyncMemoryAdmin, a: ReportSkillTrial) -> tuple[str, dict]:
    answer = await api.report_skill_trial(a.name, outcome=a.outcome, task_ref=a.task_ref, notes=a.notes)
    return _text(answer), answer


async def _all_skills(api: AsyncMemoryAdmin, scope: str | None) -> list[dict]:
    skills, after = [], None
    while True:
        page = await api.list_skills(scope, limit=200, after=after)
        skills += page["skills"]
        after = page.get("next_after")
        if not after:
            return skills


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    arguments: type[_Arguments]
    run: Callable[[AsyncMemoryAdmin, Any], Awaitable[tuple[str, dict]]]
    renamed: dict[str, str]  # the API's field name -> this tool's, for the API's per-field messages
    read_only: bool = False

    def tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.arguments.model_json_schema(),
            annotations=types.ToolAnnotations(read_only_hint=self.read_only, open_world_hint=False),
        )


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec(
            "search_memory",
            "Find the reviewed lessons for a task. Answers a context block to follow, the ids of the lessons in "
            "it, and a retrieval_id: call report_outcome with it when the task is done.",
            SearchMemory,
            _search_memory,
            {"q": "query"},
        ),
        ToolSpec(
            "submit_lesson",
            "Propose a lesson you learned, with its evidence. A person reviews it before any agent is given it. "
            "The answer says whether it is pending review, a duplicate of an existing lesson (duplicate_of; its "
            "evidence was added there), or in conflict with others (conflicts).",
            SubmitLesson,
            _submit_lesson,
            {},
        ),
        ToolSpec(
            "report_outcome",
            "Say how the task that used a search_memory answer went, and which lessons you applied (used). "
            "Each lesson is judged against tasks without it: one that helps gains confidence, one that makes "
            "tasks fail more often than without it goes to a person for a recheck. Once per retrieval.",
            ReportOutcome,
            _report_outcome,
            {},
        ),
        ToolSpec(
            "add_evidence",
            "Add evidence for or against an existing lesson (by entry id), e.g. a test that confirms it or an "
            "error that contradicts it.",
            AddEvidence,
            _add_evidence,
            {},
        ),
        ToolSpec(
            "request_forget",
            "Only when the user explicitly asks to forget something: file a request to forget a lesson (by entry "
            "id, or by its text in a scope). A person decides; the answer is the request id.",
            RequestForget,
            _request_forget,
            {},
        ),
        ToolSpec(
            "list_skills",
            "List the approved skills (reviewed step-by-step procedures) of a scope. Read one with get_skill.",
            ListSkills,
            _list_skills,
            {},
            read_only=True,
        ),
        ToolSpec(
            "get_skill",
            "Read a skill's SKILL.md: when to use it, its steps, parameters, verification, rollback and pitfalls.",
            GetSkill,
            _get_skill,
            {},
            read_only=True,
        ),
        ToolSpec(
            "report_skill_trial",
            "Report a trial run of a nominated skill (one not yet approved): success or failure, once per task.",
            ReportSkillTrial,
            _report_skill_trial,
            {},
        ),
    ]
}


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _api_refusal(exc: MemoryAdminError, renamed: dict[str, str]) -> str:
    fields = "; ".join(f"{renamed.get(name, name)}: {' '.join(messages)}" for name, messages in exc.errors.items())
    return f"{exc.message} {fields}".strip() if fields else exc.message


def _invalid_arguments(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors(include_input=False)
    )
    return f"Some arguments are not valid. {problems}"


def memory_uri(scope: str) -> str:
    return f"memoryadmin://memory/{quote(scope, safe='/')}"


def skill_uri(slug: str) -> str:
    return f"memoryadmin://skills/{quote(slug, safe='')}/SKILL.md"


MEMORY_PREFIX, SKILL_PREFIX, SKILL_SUFFIX = "memoryadmin://memory/", "memoryadmin://skills/", "/SKILL.md"


def _memory_document(scope: str, export: dict) -> str:
    """A scope's memory as one document: the published lessons of the scope and the scopes below it (the
    export's topic files, as the export writes them), cut to MEMORY_BUDGET_CHARS. A read, not a task:
    no retrieval is recorded, so it has no retrieval_id to report an outcome with (search_memory has)."""
    topics = [text for path, text in sorted(export["files"].items()) if path.startswith("topics/")]
    body = "\n".join(topics) or "No reviewed lessons published under this scope yet."
    if len(body) > MEMORY_BUDGET_CHARS:
        body = body[:MEMORY_BUDGET_CHARS].rsplit("\n## ", 1)[0] + (
            "\n\n(More lessons than fit here: search_memory finds those that apply to a task.)"
        )
    lines = [
        f"# Curated memory: {scope}",
        "",
        f"Lessons that people reviewed, published as version {export['memory_version']}. Follow them where "
        "they apply; search_memory ranks them for a task and gives a retrieval_id to report the outcome with.",
        "",
        body,
    ]
    return "\n".join(lines) + "\n"


def build_server(client_for: ClientFor, *, scopes: tuple[str, ...] = (), version: str = "") -> Server[Any]:
    """The MCP server; `client_for(ctx)` opens the API client for one request. The memory resources are
    the token's scopes and `scopes` (e.g. the project's own, below the token's); any other scope is
    read through the resource template."""

    # The tools never change while the server runs, and rendering their JSON schemas is pydantic's slowest
    # work: built once here, for tools/list and for the check of a 2026-07-28 tools/call's Mcp-Param headers
    # (which would otherwise run tools/list on every call). Only a schema that names an argument's header
    # (x-mcp-header) has anything to check; the others are left out, and their calls skip the check.
    tools = [spec.tool() for spec in TOOLS.values()]
    header_schemas = {tool.name: tool.input_schema for tool in tools if x_mcp_header_map(tool.input_schema)}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            return _tool_error(f"No tool {params.name!r}; the tools are {', '.join(TOOLS)}.")
        try:
            arguments = spec.arguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _tool_error(_invalid_arguments(exc))
        try:
            async with client_for(ctx) as api:
                text, structured = await spec.run(api, arguments)
        except MemoryAdminError as exc:
            return _tool_error(_api_refusal(exc, spec.renamed))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)

    async def list_resources(ctx, params) -> types.ListResourcesResult:
        async with client_for(ctx) as api:
            token = await api.token()
            skills = await _all_skills(api, None)
        resources = [
            types.Resource(
                uri=memory_uri(scope),
                name=f"memory: {scope}",
                mime_type="text/markdown",
                description=f"The reviewed lessons of {scope}, as one document.",
            )
            for scope in dict.fromkeys([*token["scopes"], *scopes])
        ]
        resources += [
            types.Resource(
                uri=skill_uri(s["slug"]),
                name=f"skill: {s['slug']}",
                mime_type="text/markdown",
                description=s["description"],
            )
            for s in skills
        ]
        return types.ListResourcesResult(resources=resources)

    async def list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template="memoryadmin://memory/{scope}",
                    name="memory of a scope",
                    mime_type="text/markdown",
                    description="The published lessons of a scope the token covers and of the scopes below it.",
                ),
                types.ResourceTemplate(
                    uri_template="memoryadmin://skills/{name}/SKILL.md",
                    name="a skill",
                    mime_type="text/markdown",
                    description="A skill's SKILL.md.",
                ),
            ]
        )

    async def read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            text = await _read(ctx, uri)
        except MemoryAdminError as exc:  # as a tool's refusal: what was refused and why
            raise MCPError(types.INVALID_PARAMS, _api_refusal(exc, {})) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    async def _read(ctx, uri: str) -> str:
        async with client_for(ctx) as api:
            if uri.startswith(MEMORY_PREFIX):
                scope = unquote(uri.removeprefix(MEMORY_PREFIX))
                text = _memory_document(scope, await api.export(scope))
            elif uri.startswith(SKILL_PREFIX) and uri.endswith(SKILL_SUFFIX):
                skill = await api.get_skill(unquote(uri.removeprefix(SKILL_PREFIX).removesuffix(SKILL_SUFFIX)))
                text = skill["skill_md"]
            else:
                raise MemoryAdminError(
                    404,
                    f"No resource {uri}: the resources are memoryadmin://memory/<scope> "
                    "and memoryadmin://skills/<name>/SKILL.md.",
                )
        return text

    return Server(
        SERVER_NAME,
        version=version,
        instructions=INSTRUCTIONS,
        get_tool_input_schema=header_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )
