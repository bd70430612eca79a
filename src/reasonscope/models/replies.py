"""The shapes of the API replies the providers read, checked before anything is read from them.

The SDKs build their reply objects without checking them (``model_construct``): a server that answers
``{"choices": "nope"}``, ``{"choices": [{"message": 5}]}``, a list or a bare string reaches the
provider as is, and reading it raised ``AttributeError``, ``TypeError`` or ``IndexError`` there, which
ended the request as a failed generation. Every reply is therefore validated against the pydantic
models below first (only the fields reasonscope reads; others are ignored), and any mismatch raises
:class:`~reasonscope.models.base.MalformedReply`: the one rule for every malformed reply, like a body
that is not JSON at all. It is retried as a transient error and, when the retries run out, the request
is pending (not stored, sent again by the next run).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .base import MalformedReply


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- OpenAI chat completions ---------------------------------------------------------------------
class ToolFunction(_Shape):
    """The function of a tool call (only its name is read)."""

    name: str | None = None


class ToolCall(_Shape):
    """A tool call of a chat message."""

    function: ToolFunction | None = None


class ChatMessage(_Shape):
    """The message of an OpenAI chat choice: content, refusal, reasoning content and tool calls."""

    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None


class TopLogprob(_Shape):
    """One alternative token and its log-probability."""

    token: str
    logprob: float


class TokenLogprobs(_Shape):
    """The top alternatives of one generated token."""

    top_logprobs: list[TopLogprob] = Field(default_factory=list)


class ChoiceLogprobs(_Shape):
    """The per-token log-probabilities of a chat choice."""

    content: list[TokenLogprobs] | None = None


class ChatChoice(_Shape):
    """One choice of an OpenAI chat completion: message, finish reason, log-probabilities."""

    message: ChatMessage
    finish_reason: str | None = None
    logprobs: ChoiceLogprobs | None = None


class ChatUsage(_Shape):
    """Token counts of an OpenAI chat completion."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class ChatReply(_Shape):
    """An OpenAI chat completion: at least one choice, each with a message."""

    choices: list[ChatChoice] = Field(min_length=1)
    usage: ChatUsage | None = None


# -- Anthropic messages --------------------------------------------------------------------------
class ContentBlock(_Shape):
    """One content block of an Anthropic message; a ``text`` or ``thinking`` block must carry that field."""

    type: str
    text: str | None = None
    thinking: str | None = None
    name: str | None = None
    input: Any = None

    @model_validator(mode="after")
    def _has_its_field(self) -> ContentBlock:
        if self.type == "text" and self.text is None:
            raise ValueError("a text block without text")
        if self.type == "thinking" and self.thinking is None:
            raise ValueError("a thinking block without thinking")
        return self


class MessagesUsage(_Shape):
    """Token counts of an Anthropic message."""

    input_tokens: int | None = None
    output_tokens: int | None = None


class MessagesReply(_Shape):
    """An Anthropic message: a list of content blocks (possibly empty) and a stop reason."""

    content: list[ContentBlock]
    stop_reason: str | None = None
    usage: MessagesUsage | None = None


Shape = TypeVar("Shape", bound=BaseModel)


def read_reply(shape: type[Shape], reply: Any) -> Shape:
    """``reply`` checked against ``shape``; :class:`MalformedReply` naming the first mismatch otherwise.

    ``reply`` is an SDK object, or whatever the SDK returned for a body of another type.
    """
    data = reply.model_dump(warnings=False) if isinstance(reply, BaseModel) else reply
    try:
        return shape.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the reply"
        raise MalformedReply(f"malformed response: {where}: {first['msg']} (got {_short(first.get('input'))}); "
                             f"{err.error_count()} problem{'s' if err.error_count() > 1 else ''} in all") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
