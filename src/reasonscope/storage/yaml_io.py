"""Reading and writing plan files: YAML 1.2 (ruamel.yaml), with the line of every key.

Rules of :func:`read_yaml` (each break is a :class:`YAMLReadError` naming file and line):

* **YAML 1.2.** ``name: no``, ``split: on`` and ``answer: yes`` are the strings they look like;
  only ``true`` / ``false`` are booleans (YAML 1.1, which PyYAML reads, turns ``no``, ``on``, ``y``
  into booleans). A document that starts with ``%YAML 1.1`` is read by the 1.1 rules it asks for.
* **One value per key.** A key given twice in one mapping (``models:`` twice, ``temperature:`` twice
  in one model) is an error naming both lines; nothing is merged silently. A merge key
  (``<<: *defaults``) may still be overridden by the mapping's own keys, as YAML defines.
* **Aliases are bounded.** Anchors and aliases (``&defaults`` / ``*defaults``) are allowed, but an
  alias that contains itself is an error, and so is a document that expands to more than
  :data:`MAX_NODES` values (a "billion laughs" chain of aliases would otherwise take minutes and
  gigabytes to walk) or nests deeper than :data:`MAX_DEPTH`.
* **Plain values only.** Tags other than YAML's own (``!!python/object``, ``!custom``) are errors.
* **Plan-sized, plan-shaped.** :func:`reasonscope.plan.load_plan` reads at most :data:`MAX_PLAN_BYTES` (256 KiB;
  plans are a few KB) and refuses, before parsing, a file that is larger, binary (a NUL byte; gzip, zip, SQLite,
  PDF or image signatures are named) or whose first line is not a key, a flow mapping or a YAML directive
  (a JSON Lines or CSV file given where a plan goes: :func:`describe_non_plan`). The message says what the file looks like and names
  the limit; a multi-MB file is refused in milliseconds instead of being parsed for tens of seconds.
  A document that writes out more than :data:`MAX_EVENTS` values (20,000), or expands to more than
  :data:`MAX_NODES` without aliases, is refused as "not a plan", not as an alias bomb.

The result is plain Python (dict, list, str, int, float, bool, None, date/datetime) and a map
from each key path (tuple of keys and list indexes) to its 1-based line, taken from the same parse.

:func:`dump_yaml` writes YAML 1.2 with quotes where a string would otherwise read back as another
type, so a resolved plan (``RUN_DIR/config.yaml``) reads back as exactly the same values.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

MAX_NODES = 100_000
MAX_DEPTH = 100
MAX_PLAN_BYTES = 256 * 1024
"""Largest plan file read (bytes); plans are a few KB."""
MAX_EVENTS = 20_000
"""Most values (scalars and collections, aliases not expanded) a plan may write out; plans hold a few hundred."""

SIGNATURES = ((b"\x1f\x8b", "a gzip-compressed file"), (b"PK\x03\x04", "a zip archive (an inspect-ai .eval log, an "
              ".xlsx workbook?)"), (b"SQLite format 3\x00", "a SQLite database (a run's store.sqlite?)"),
              (b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"), (b"\x7fELF", "an executable"))

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge", "timestamp",
                                     "omap", "set", "binary")}


class YAMLReadError(ValueError):
    """A plan file that cannot be read as YAML; the message names file and line."""


def _line(node: Any) -> int:
    return node.start_mark.line + 1


def _check(root: Any, source: str) -> dict[tuple, int]:
    """Walk the composed node graph once.

    Reject recursive aliases, unknown tags, duplicate keys and oversized expansions; return the line of every
    key path.
    """
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    lines: dict[tuple, int] = {}
    visited = 0
    met: set[int] = set()  # nodes met before: reached again only through an alias
    aliased = 0
    # (node, path, ancestors on the current branch); explicit stack: no recursion limit to hit
    stack: list[tuple[Any, tuple, frozenset[int]]] = [(root, (), frozenset())]
    while stack:
        node, path, ancestors = stack.pop()
        visited += 1
        if id(node) in met:
            aliased += 1
        met.add(id(node))
        if visited > MAX_NODES:
            if not aliased:
                raise YAMLReadError(f"{source}: the document holds more than {MAX_NODES:,} values, far more than any "
                                    "plan (a plan names a few models, datasets and settings); is this a plan file?")
            raise YAMLReadError(f"{source}:{_line(node)}: the document expands to more than {MAX_NODES:,} values "
                                "(aliases repeating aliases, as in a 'billion laughs' document); write the values out "
                                "or use fewer nested aliases")
        if len(path) > MAX_DEPTH:
            raise YAMLReadError(f"{source}:{_line(node)}: nesting deeper than {MAX_DEPTH} levels")
        if id(node) in ancestors:
            raise YAMLReadError(f"{source}:{_line(node)}: a recursive alias (an anchor used inside its own value); "
                                "a plan must be a finite tree")
        if str(node.tag) not in _ALLOWED_TAGS:
            raise YAMLReadError(f"{source}:{_line(node)}: unsupported YAML tag {node.tag!s} (plans hold plain values: "
                                "mappings, lists, strings, numbers, booleans, null)")
        lines.setdefault(path, _line(node))
        inner = ancestors | {id(node)}
        if isinstance(node, MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if str(key.tag) == _CORE + "merge":  # <<: *defaults (its keys give way to the mapping's own)
                    merged = value.value if isinstance(value, SequenceNode) else [value]
                    stack.extend((m, path, inner) for m in merged)
                    continue
                if not isinstance(key, ScalarNode):
                    raise YAMLReadError(f"{source}:{_line(key)}: a mapping key must be a plain value, not a "
                                        f"{'list' if isinstance(key, SequenceNode) else 'mapping'}")
                ident = (str(key.tag), key.value)
                if ident in seen:
                    raise YAMLReadError(f"{source}:{_line(key)}: duplicate key {key.value!r} (first given at line "
                                        f"{seen[ident]}); each key may appear once per mapping")
                seen[ident] = _line(key)
                sub = path + (key.value,)
                lines.setdefault(sub, _line(key))
                stack.append((value, sub, inner))
        elif isinstance(node, SequenceNode):
            stack.extend((value, path + (i,), inner) for i, value in enumerate(node.value))
    return lines


def _check_nesting(yaml: Any, text: str, source: str) -> None:
    """Stop at the first collection nested deeper than :data:`MAX_DEPTH`, reading parser events lazily.

    Composing a deeply nested document recurses once per level and takes seconds. A document of more than
    :data:`MAX_EVENTS` values stops here too, before the slower composing step.
    """
    from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

    depth = 0
    for count, event in enumerate(yaml.parse(text)):
        if count > MAX_EVENTS:
            raise YAMLReadError(f"{source}:{event.start_mark.line + 1}: the document holds more than {MAX_EVENTS:,} "
                                "values, far more than any plan (a plan names a few models, datasets and settings); "
                                "is this a plan file?")
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YAMLReadError(f"{source}:{event.start_mark.line + 1}: nesting deeper than {MAX_DEPTH} levels")
        elif isinstance(event, CollectionEndEvent):
            depth -= 1


def _plain(value: Any) -> Any:
    """Plain Python values for ruamel's round-trip containers and scalar subclasses.

    Bounded by the checks of :func:`_check`.
    """
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return sorted(_plain(v) for v in value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def read_yaml(text: str, source: str = "<yaml>") -> tuple[Any, dict[tuple, int]]:
    """Parse one YAML document (rules in the module docstring).

    Return ``(data, lines)``; ``data`` is None for an empty document.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt", pure=True)
    try:
        _check_nesting(yaml, text, source)
        node = yaml.compose(text)
        if node is None:
            return None, {}
        lines = _check(node, source)
        data = yaml.constructor.construct_document(node)
    except YAMLReadError:
        raise
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise YAMLReadError(f"{where}: YAML syntax error: {err.problem or err.context}") from None
    except YAMLError as err:
        raise YAMLReadError(f"{source}: YAML error: {err}") from None
    except RecursionError:
        raise YAMLReadError(f"{source}: YAML nesting too deep to read") from None
    return _plain(data), lines


def describe_non_plan(head: bytes) -> str | None:
    """What the start of a file shows it to be when that cannot be a YAML plan; None when it may be one.

    ``head`` is the file's first bytes (a few KB). Binary signatures and NUL bytes are named; text whose
    first line (after blank lines, comments and directives) is neither a ``key:``, a flow mapping ``{``,
    a document start nor a YAML node property is described by its shape (JSON Lines, a list, CSV, text).
    """
    for magic, what in SIGNATURES:
        if head.startswith(magic):
            return what
    if b"\x00" in head:
        return f"binary data (a NUL byte at byte {head.index(0)})"
    text = head.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    records = [line for line in text.splitlines()[:-1] if line.strip()][:3]  # the last may be cut short
    if len(records) >= 2 and all(_json_object(line) for line in records):
        return "JSON Lines (one JSON record per line: a dataset or predictions file?)"
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("%") or line in ("---", "..."):
            continue
        if line.startswith("--- "):
            line = line[4:].strip()
        if line.startswith(("{", "?", "&", "!", "<<")) or _KEY.match(line):
            return None
        first = line[:60] + ("..." if len(line) > 60 else "")
        if line.startswith("[") or line.startswith("- ") or line == "-":
            return f"a YAML or JSON list (its first line is {first!r}); a plan is a mapping of keys"
        if line.startswith('"') and ":" in line:
            return None  # a quoted key
        if "," in line or "\t" in raw:
            return f"CSV or other tabular text (its first line is {first!r})"
        return f"text whose first line is not a key (it is {first!r})"
    return None


_KEY = re.compile(r"""^(?:[^\s#'"\[\]{},:][^:#]*|'[^']*'|"[^"]*")\s*:(?:\s|$)""")


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def dump_yaml(data: Any) -> str:
    """YAML 1.2 text of plain data, keys in their order; reads back as the same values."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()
