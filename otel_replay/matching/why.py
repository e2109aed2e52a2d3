"""``why``: a readable explanation of a replay miss against the closest recordings.

The report starts with the miss line the gateway returned (or says which recording the
request would match), then, for each of the nearest recordings, every component as equal,
differing or not recorded, with short hashes (and, for a recording whose source recorded
some parameters only, the live request's others, not compared), and a unified diff of the
normalised JSON of each differing component, trimmed so one huge conversation does not
flood a terminal.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Sequence

from otel_replay.core.exchange import COMPONENT_LABELS, COMPONENTS, JSON, CanonicalRequest
from otel_replay.core.ids import SHORT_HASH_DIGITS
from otel_replay.matching.matcher import Matcher, Only
from otel_replay.matching.normalize import Normalizer
from otel_replay.matching.projection import compare, shape

MAX_DIFF_LINES = 40
MAX_LINE_CHARS = 160
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)((?:\\\\)*)\\n")
_LABEL_WIDTH = max(len(label) for label in COMPONENT_LABELS.values())


def explain(
    live: CanonicalRequest,
    recordings: Sequence[CanonicalRequest],
    used: Collection[int] = (),
    k: int = 3,
    normalizer: Normalizer | None = None,
    recorded_by: Normalizer | None = None,
    only: Only | None = None,
) -> str:
    """The report for ``live`` against ``recordings`` (``used`` marks consumed ones),
    normalised by ``normalizer`` (the built-in rules by default; the recordings by
    ``recorded_by`` when given), among those ``only`` accepts when given (``Matcher.match``)."""
    matcher = Matcher(recordings, used=used, normalizer=normalizer, recorded_by=recorded_by)
    return explain_against(matcher, live, k, only)


def explain_against(
    matcher: Matcher, live: CanonicalRequest, k: int = 3, only: Only | None = None
) -> str:
    """``explain`` against a matcher already built (a running session's, as it stands)."""
    outcome = matcher.probe(live, only)
    if isinstance(outcome, int):
        head = f"no miss: the request matches recording #{outcome} (unused)"
    else:
        head = str(outcome)
    lines = [head, ""]
    nearest = matcher.nearest(live, k=k)
    if not nearest:
        lines.append("the cassette holds no recordings")
        return "\n".join(lines) + "\n"
    lines.append(f"nearest recordings ({len(nearest)} of {len(matcher)}):")
    normal = matcher.normalizer.normalize(live)
    recorded = matcher.recordings
    for index, _differing in nearest:
        state = "used" if index in matcher.used else "unused"
        lines.append("")
        lines.append(f"recording #{index} ({state})")
        lines.extend(_recording_report(recorded[index], normal, index))
    return "\n".join(lines) + "\n"


def _recording_report(recorded: CanonicalRequest, live: CanonicalRequest, index: int) -> list[str]:
    lines: list[str] = []
    diffs: list[str] = []
    n = SHORT_HASH_DIGITS
    for name in COMPONENTS:
        label = COMPONENT_LABELS[name].ljust(_LABEL_WIDTH)
        compared = compare(recorded, live, name)
        if not compared.recorded:
            lines.append(f"  {label}  not recorded")
            continue
        was7, now7 = compared.was_digest[:n], compared.now_digest[:n]
        if compared.equal:
            lines.append(f"  {label}  equal    {was7}")
            continue
        lines.append(f"  {label}  differs  {was7}→{now7}")
        diffs.extend(_diff(COMPONENT_LABELS[name], index, compared.was, compared.now))
    return lines + _not_compared(recorded, live) + diffs


def _not_compared(recorded: CanonicalRequest, live: CanonicalRequest) -> list[str]:
    """The live request's params a recording compared by name does not have (its source
    did not record them): not compared, said so."""
    partial = shape(recorded).partial
    if partial is None or not isinstance(live.params, dict):
        return []
    names = sorted(set(live.params) - set(partial))
    if not names:
        return []
    return [
        f"  params not compared: {', '.join(names)} (the recording's source did not record them)"
    ]


def _pretty(value: JSON) -> list[str]:
    """Indented JSON, with long strings broken at their newlines and then at
    ``MAX_LINE_CHARS``, so a change deep inside a long prompt shows as a short line."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    lines: list[str] = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        pieces = _ESCAPED_NEWLINE.sub(lambda m: m.group(1) + "\\n\n", line).split("\n")
        for i, piece in enumerate(pieces):
            lines.extend(_wrap(piece if i == 0 else indent + piece, indent))
    return lines


def _wrap(line: str, indent: str) -> list[str]:
    if len(line) <= MAX_LINE_CHARS:
        return [line]
    width = max(MAX_LINE_CHARS - len(indent), 20)
    head, rest = line[:MAX_LINE_CHARS], line[MAX_LINE_CHARS:]
    return [head, *(indent + rest[i : i + width] for i in range(0, len(rest), width))]


def _diff(label: str, index: int, was: JSON, now: JSON) -> list[str]:
    """A unified diff of one component, indented and trimmed to ``MAX_DIFF_LINES``."""
    diff = list(
        difflib.unified_diff(
            _pretty(was),
            _pretty(now),
            fromfile=f"recording #{index} {label}",
            tofile=f"live {label}",
            lineterm="",
            n=2,
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        hidden = len(diff) - MAX_DIFF_LINES
        diff = [*diff[:MAX_DIFF_LINES], f"... ({hidden} more diff lines)"]
    return ["", *(f"    {line}" for line in diff)]
