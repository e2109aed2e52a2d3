"""The request's half of a recorded span, drafted while the provider works.

A recorded call's span is written before its answer reaches the agent, so what it costs
once the answer is in adds to the call. Most of a span is the request's: its GenAI
contents and its exact body, whose long strings are found by a walk and whose texts are
encoded, for a coding agent's request hundreds of kilobytes. :class:`RequestDraft` does
that while the provider works; ``spans.encode`` then only places each long string
against the trace file (``spans.pieces``) and takes a drafted text wherever the placing
comes out as it did for the draft, so the span is the one it would have made at once.
"""

from __future__ import annotations

from otel_replay.core import genai
from otel_replay.core.exchange import JSON, CanonicalRequest, Exchange
from otel_replay.otlp import codec
from otel_replay.spans.pieces import Found, Ledger, long_strings, templated

__all__ = ["RequestDraft", "contents"]


def contents(request: CanonicalRequest) -> list[tuple[str, JSON]]:
    """The request's GenAI content attributes and their values, in the span's order."""
    return [
        (attribute, value)
        for attribute, value in (
            (genai.INPUT_MESSAGES, request.messages),
            (genai.SYSTEM_INSTRUCTIONS, request.system),
            (genai.TOOL_DEFINITIONS, request.tools),
        )
        if value is not None
    ]


class RequestDraft:
    """The request's half of a recorded span: its long strings found and its texts
    written against what the trace file held then (a fork of its ledger). Once the
    answer is in, the span places each string again (a lookup each) and uses a drafted
    text wherever the placing comes out the same."""

    __slots__ = (
        "body",
        "body_found",
        "body_text",
        "contents",
        "ids",
        "refs",
        "request",
        "template",
    )

    def __init__(self, request: CanonicalRequest, body: JSON, ledger: Ledger) -> None:
        self.request, self.body = request, body
        fork = ledger.fork()
        self.contents: dict[str, tuple[Found, list[str | None], str]] = {}
        self.ids: dict[str, str] = {}
        for attribute, value in contents(request):
            found = long_strings(value)
            known = fork.place_inline(attribute, found)
            self.contents[attribute] = (
                found,
                known,
                codec.value_text(Ledger.marked(value, found, known)),
            )
            self.ids.update(fork.named(found))
        self.body_found = long_strings(body)
        self.ids.update(fork.named(self.body_found))
        refs = [[list(path), self.ids[text]] for path, text in self.body_found]
        self.template = codec.value_text(templated(body, refs)) if refs else ""
        self.refs = codec.value_text(refs) if refs else ""
        self.body_text = None if refs else codec.value_text(body)

    def texts(self) -> list[str]:
        """The texts drafted, as the span's attributes will hold them."""
        drafted = [text for _, _, text in self.contents.values()]
        return [*drafted, self.template, self.refs, self.body_text or ""]

    def of(self, ex: Exchange) -> RequestDraft | None:
        """This draft, when it is of ``ex``'s request."""
        return self if ex.request is self.request and ex.raw_request is self.body else None
