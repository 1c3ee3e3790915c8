"""Paths into the template variables for Kluctl's `get_var`.

Kluctl resolves them with jsonpath-ng (kluctl's lib/go-jinja2 dict_utils.get_dict_value); Gantry does not depend on
it, so this module reads the simple JSON paths that get_var is documented for (docs/kluctl/templating/functions.md):
`my.deep.var`, `$.my.var`, `list[0]`, `map['odd key']`, `*` wildcards inside field names (matched like shell globs,
as Kluctl patches jsonpath-ng to do), `[*]` for all list items and `..` for any depth. Filters, slices and unions
are refused.
"""

import fnmatch
import functools
import re

# jsonpath-ng's identifier characters: ASCII letters, digits, _ @ - plus CJK and emoji ranges.
_NAME_START = "A-Za-z_@\u4e00-\u9fa5\U0001f600-\U0001f64f"
_TOKEN = re.compile(
    r"[ \t]*(?:"
    r"(?P<root>\$)"
    r"|(?P<descendants>\.\.)"
    r"|(?P<dot>\.)"
    r"|\[[ \t]*(?:(?P<index>-?\d+)|(?P<all_items>\*)|'(?P<single>(?:[^'\\]|\\.)*)'|\"(?P<double>(?:[^\"\\]|\\.)*)\")[ \t]*\]"
    rf"|(?P<name>[{_NAME_START}][{_NAME_START}0-9\-]*)"
    r"|(?P<number>-?\d+)"
    r"|(?P<star>\*)"
    r")"
)
_ESCAPE = re.compile(r"\\(.)")
_FIELDS = ("name", "number", "star")
_BRACKETS = ("index", "all_items", "single", "double")
_AFTER_STEP = ("dot", "descendants") + _BRACKETS


class InvalidPath(ValueError):
    """The path is not one of the simple JSON paths get_var supports."""


class AmbiguousPath(ValueError):
    """The path (through a wildcard) matches more than one value; get_var needs exactly one."""


def lookup(data, path):
    """Follows `path` (a JSON path string, or a list of keys and list indexes) from `data`.

    Returns `(True, value)` when exactly one value matches (a present key holding None counts as a match, as in
    Kluctl), `(False, None)` when none does.
    Raises InvalidPath for unsupported syntax and AmbiguousPath when a wildcard matches several values.
    """
    if isinstance(path, (list, tuple)):
        steps = _steps_of_list(path)
    elif isinstance(path, str):
        steps = _parse(path)
    else:
        raise InvalidPath(f"Invalid json path {path!r}: not a string or a list of keys")
    found = [data]
    for step in steps:
        found = [child for value in found for child in step(value)]
    if len(found) > 1:
        raise AmbiguousPath(f"get_var path {path!r} matches {len(found)} values, only simple paths are supported")
    return (True, found[0]) if found else (False, None)


def _steps_of_list(keys):
    return [_field(key) if isinstance(key, str) else _index(key) for key in keys]


@functools.lru_cache(maxsize=1024)
def _parse(path):
    text = path.strip(" \t")
    if not text:
        raise InvalidPath("Invalid json path '': empty")
    position = 1 if text.startswith("$") else 0
    # What may come next: a field or bracket at the start, a field after "." or "..", and after "$" or a step
    # ".", ".." or a bracket.
    allowed = _FIELDS + _BRACKETS if position == 0 else _AFTER_STEP
    steps = []
    while position < len(text):
        match = _TOKEN.match(text, position)
        kind = match.lastgroup if match else None
        if kind not in allowed:
            raise InvalidPath(f"Invalid json path {path!r}: unexpected {text[position:].strip()!r}")
        position = match.end()
        if kind == "dot":
            allowed = _FIELDS
            continue
        if kind == "descendants":
            steps.append(_subtree)
            allowed = _FIELDS
            continue
        steps.append(_bracket_step(match, kind) if kind in _BRACKETS else _field(match.group(kind)))
        allowed = _AFTER_STEP
    if allowed is not _AFTER_STEP:
        raise InvalidPath(f"Invalid json path {path!r}: ends with a dot")
    return tuple(steps)


def _bracket_step(match, kind):
    if kind == "index":
        return _index(int(match.group(kind)))
    if kind == "all_items":
        return _all_items
    return _field(_ESCAPE.sub(r"\1", match.group(kind)))


def _field(name):
    if "*" in name:
        return lambda value: [value[key] for key in value if fnmatch.fnmatch(key, name)] if isinstance(value, dict) else []
    return lambda value: [value[name]] if isinstance(value, dict) and name in value else []


def _index(index):
    def step(value):
        if isinstance(value, (list, tuple, str)) and -len(value) <= index < len(value):
            return [value[index]]
        return []

    return step


def _all_items(value):
    return list(value) if isinstance(value, (list, tuple)) else []


def _subtree(value):
    """`value` and everything nested in it, for `..`."""
    nodes = [value]
    children = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for child in children:
        nodes.extend(_subtree(child))
    return nodes
