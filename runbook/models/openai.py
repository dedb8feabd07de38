"""A client of an OpenAI or OpenAI-compatible model (tools / tool_calls / role: tool), with retries.

`base_url` points it at any server that speaks the protocol: llama.cpp's server, vLLM, Ollama (`/v1`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Unpack

from ..config import Settings
from ..errors import ConfigError
from .client import ClientOptions, ModelClient, call_with_retries, image_base64
from .messages import Message, ToolCall, ToolSpec

DEFAULT_MODEL = "gpt-4.1-mini"
KEY_ENV = "OPENAI_API_KEY"
TOOL_RESULT_ROLES = ("tool", "user")
"""How tool outputs are sent back: as `role: tool` messages (the protocol) or as user messages."""
NO_ARGUMENTS = "the call has no arguments object"
LOCAL_KEY = "not-needed"
"""Sent to a base_url server when no key is set: local servers ignore it, the SDK insists on one."""

_FENCED = re.compile(
    r"```(?:json|tool_call)?\s*(\{.*?\})\s*```"
    r"|<tool_call>\s*(\{.*?\})\s*(?:</tool_call>|$)",
    re.S,
)
"""A call in a ```json fence, or in <tool_call> tags (the Hermes / Qwen chat templates' form)."""


class OpenAIModel(ModelClient):
    """Asks an OpenAI(-compatible) chat model for the next tool calls."""

    name = "openai"
    SETTING_OPTIONS = {**ModelClient.SETTING_OPTIONS, "tool_results": "tool_results"}

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        client: Any = None,
        tool_results: str = "tool",
        **options: Unpack[ClientOptions],
    ):
        import openai

        if tool_results not in TOOL_RESULT_ROLES:
            raise ConfigError(f"tool_results must be one of {', '.join(TOOL_RESULT_ROLES)}, got {tool_results!r}")
        super().__init__(**options)
        self.tool_results = tool_results
        if client is None and not api_key and not self.base_url:
            raise ConfigError(
                f"the openai policy needs {KEY_ENV}, or OPENAI_BASE_URL for a compatible server "
                f"(llama.cpp, vLLM, Ollama); or choose --policy offline"
            )
        # retries are tenacity's job here (one place, honouring retry-after), so the SDK's own are off
        self.client = client or openai.OpenAI(
            api_key=api_key or LOCAL_KEY, base_url=self.base_url, timeout=self.timeout, max_retries=0
        )
        self.model = model or (self.served_model() if self.base_url else DEFAULT_MODEL)

    def served_model(self) -> str:
        """The first model a compatible server lists: llama.cpp serves one; vLLM and Ollama want its name."""
        try:
            models = call_with_retries(lambda: list(self.client.models.list()), attempts=2, wait=self.wait)
        except Exception as exc:
            raise ConfigError(
                f"no model name is set and {self.base_url}/models did not list one ({exc}); set RUNBOOK_MODEL"
            ) from exc
        if not models:
            raise ConfigError(f"no model name is set and {self.base_url}/models lists none; set RUNBOOK_MODEL")
        return models[0].id

    @classmethod
    def from_settings(cls, settings: Settings, *, model: str | None = None, **options: Any) -> OpenAIModel:
        return cls(
            model or settings.model,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            **cls.options_from(settings, options),
        )

    def next(self, messages: list[Message], tools: list[ToolSpec]) -> Message:
        messages_out = to_openai(messages, self.tool_results, null_content=not self.base_url)
        request: dict[str, Any] = {"model": self.model, "messages": messages_out}
        # OpenAI's newer models refuse `max_tokens`; compatible servers do not all know its successor
        request["max_tokens" if self.base_url else "max_completion_tokens"] = self.max_output_tokens
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools
            ]
            # OpenAI's default, said explicitly: llama-cpp-python's chatml-function-calling format leaves the
            # tools out of the prompt when tool_choice is missing
            request["tool_choice"] = "auto"
        reply = self._complete(request, tools)
        named = reply.tool_calls[0].name if len(reply.tool_calls) == 1 else None
        if named and reply.tool_calls[0].error == NO_ARGUMENTS:
            # the model named a tool and stopped (llama-cpp-python's "message" path does this): ask again with
            # that tool chosen, which makes such servers write its arguments
            forced = self._complete(
                {**request, "tool_choice": {"type": "function", "function": {"name": named}}}, tools
            )
            forced.usage = {
                key: forced.usage.get(key, 0) + reply.usage.get(key, 0) for key in set(forced.usage) | set(reply.usage)
            }
            return forced
        return reply

    def _complete(self, request: dict[str, Any], tools: list[ToolSpec]) -> Message:
        response = self.call_api(
            self.client.chat.completions.create,
            request,
            key_env=KEY_ENV,
            provider="the OpenAI-compatible server" if self.base_url else "OpenAI",
        )
        return from_openai(response, {t.name: t.parameters for t in tools})


def to_openai(
    messages: list[Message], tool_results: str = "tool", *, null_content: bool = True
) -> list[dict[str, Any]]:
    """Chat messages in OpenAI's shape: one `role: tool` message per tool result, or with `tool_results="user"`
    the results of one turn together in one user message. `null_content=False` sends "" where OpenAI allows null
    (beside tool calls): llama-cpp-python's server refuses null."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool" and message.tool_result is not None:
            result = message.tool_result
            if tool_results == "tool":
                out.append({"role": "tool", "tool_call_id": result.call_id, "content": result.output or "(no output)"})
                continue
            shown = f"Output of {result.name} ({result.call_id}):\n{result.output or '(no output)'}"
            if out and out[-1]["role"] == "user" and out[-1].get("tool_results"):
                out[-1]["content"] += "\n\n" + shown
            else:
                out.append({"role": "user", "content": shown, "tool_results": True})
        elif message.role == "assistant":
            # content may be null only beside tool calls
            content = message.text or (None if message.tool_calls and null_content else "")
            turn: dict[str, Any] = {"role": "assistant", "content": content}
            if message.tool_calls:
                turn["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in message.tool_calls
                ]
            out.append(turn)
        else:
            out.append({"role": message.role, "content": _content(message)})
    for turn in out:
        turn.pop("tool_results", None)  # only a marker for merging above
    return out


def _content(message: Message) -> str | list[dict[str, Any]]:
    if not message.parts:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
    for part in message.parts:
        if part.get("type") == "image":
            media, data = image_base64(part["value"])
            parts.append({"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}})
        elif part.get("value"):
            parts.append({"type": "text", "text": part["value"]})
    return parts


def from_openai(response: Any, tools: Mapping[str, dict[str, Any]] | Iterable[str]) -> Message:
    """An assistant Message from a chat completion; a tool call written as JSON in the text counts too."""
    if not response.choices:
        raise RuntimeError("the server returned no choices")
    message = response.choices[0].message
    text = (message.content or "").strip()
    calls = [_call(n, c) for n, c in enumerate(message.tool_calls or [])]
    if not calls and tools:
        calls = calls_from_text(text, tools)
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return Message(
        "assistant",
        text,
        calls,
        usage={
            "input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "output_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "cached_tokens": int(getattr(details, "cached_tokens", 0) or 0),
        },
    )


def _call(n: int, raw: Any) -> ToolCall:
    function = raw.function
    call_id = raw.id or f"call_{n}"
    arguments = function.arguments
    if isinstance(arguments, dict):
        return ToolCall(call_id, function.name, arguments)
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolCall(
            call_id, function.name, {}, error=f"not valid JSON: {exc.msg} at {exc.pos} in {(arguments or '')[:200]!r}"
        )
    if not isinstance(parsed, dict):
        return ToolCall(call_id, function.name, {}, error=f"a JSON {type(parsed).__name__}, not an object")
    return ToolCall(call_id, function.name, parsed)


def calls_from_text(text: str, tools: Mapping[str, dict[str, Any]] | Iterable[str]) -> list[ToolCall]:
    """Tool calls a small local model wrote as text ({"name": ..., "arguments": {...}}): fenced, tagged or bare.

    `tools` names the tools, or maps each name to its JSON Schema. Small models also write OpenAI's nested form
    ({"function": {"name": ..., "arguments": ...}}), Python literals instead of JSON (r"..." strings, True, None),
    or only the arguments: an object whose keys fit exactly one tool's schema is a call of that tool. A block that
    names a tool but cannot be read becomes a call error, so the model is told what was wrong."""
    schemas = dict(tools) if isinstance(tools, Mapping) else {name: {} for name in tools}
    tool_names = set(schemas)
    candidates = [m.group(1) or m.group(2) for m in _FENCED.finditer(text)]
    candidates += [
        '{"name": %s, "arguments": %s}' % (json.dumps(m.group(1)), m.group(2) or "null")
        for m in _FUNCTIONS_FORM.finditer(text)
    ]
    stripped = text.strip()
    if not candidates and stripped.startswith("{") and stripped.endswith("}"):
        candidates = [stripped]
    calls = []
    for n, candidate in enumerate(candidates):
        call_id = f"text_call_{n}"
        obj, problem = _object_from_text(candidate)
        if obj is None:
            named = _NAMED.search(candidate)
            if named and named.group(1) in tool_names:
                calls.append(ToolCall(call_id, named.group(1), {}, error=f"the call is not valid JSON: {problem}"))
            continue
        if isinstance(obj.get("function"), dict) and "name" not in obj:
            obj = obj["function"]
        if "name" not in obj:
            fitting = _fitting_tool(obj, schemas)
            obj = {"name": fitting, "arguments": obj} if fitting else obj
        if obj.get("name") not in tool_names:
            continue
        arguments = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(arguments, str):
            arguments, problem = _object_from_text(arguments)
            if arguments is None:
                calls.append(ToolCall(call_id, obj["name"], {}, error=f"arguments are not valid JSON: {problem}"))
                continue
        if isinstance(arguments, dict):
            calls.append(ToolCall(call_id, obj["name"], arguments))
        elif arguments is None:
            calls.append(ToolCall(call_id, obj["name"], {}, error=NO_ARGUMENTS))
    return _distinct(calls)


def _distinct(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls without repeats: a model that writes one call in two forms means it once."""
    seen: set[str] = set()
    out = []
    for call in calls:
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str) + (call.error or "")
        if key not in seen:
            seen.add(key)
            out.append(call)
    return out


_FUNCTIONS_FORM = re.compile(r"^functions\.(\w+):[ \t]*(?:\n(\{.*?\})[ \t]*(?=\nfunctions\.|\Z))?", re.S | re.M)
"""llama-cpp-python's chatml-function-calling form, `functions.NAME:` then the arguments on the next line."""
_NAMED = re.compile(r"""["']name["']\s*:\s*["'](\w+)["']""")


def _fitting_tool(arguments: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> str | None:
    """The one tool whose schema these keys fit (all its required keys, no unknown ones), if exactly one does."""
    keys = set(arguments)
    fitting = [
        name
        for name, schema in schemas.items()
        if schema.get("required") and set(schema["required"]) <= keys <= set(schema.get("properties", {}))
    ]
    return fitting[0] if len(fitting) == 1 else None


def _object_from_text(candidate: str) -> tuple[dict | None, str]:
    """(the object, "") from JSON or a Python literal; (None, what JSON objected to) otherwise."""
    try:
        obj = json.loads(candidate)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at {exc.pos} in {candidate[:200]!r}"
        try:
            obj = ast.literal_eval(_PY_CONSTANTS.sub(lambda m: _PY_NAMES[m.group(0)], candidate))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None, problem
    return (obj, "") if isinstance(obj, dict) else (None, f"a JSON {type(obj).__name__}, not an object")


_PY_NAMES = {"true": "True", "false": "False", "null": "None"}
_PY_CONSTANTS = re.compile(r"\b(?:true|false|null)\b")
