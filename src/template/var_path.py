"""JSON paths into the template variables for Kluctl's `get_var`, resolved as Kluctl resolves them: with
jsonpath-ng's extended parser (filters, slices, `len`, ...), where a `*` inside a field name is a shell glob over the
keys (kluctl's lib/go-jinja2 jsonpath_utils.py widens jsonpath-ng's whole-field `*` that way), and exactly one match
is required (dict_utils.get_dict_value).
"""

import fnmatch
import functools
import warnings


def lookup(data, path):
    """Follows `path` (a JSON path string, or a list of keys and list indexes) from `data`.

    Returns `(True, value)` when exactly one value matches (a present key holding None counts as a match, as in
    Kluctl), `(False, None)` when none does.
    Raises Exception with Kluctl's messages for an invalid path or one matching several values.
    """
    matches = _parse(_path_text(path) if isinstance(path, (list, tuple)) else path).find(data)
    if len(matches) > 1:
        raise Exception("Only simple jsonpath supported in get_dict_value")
    return (True, matches[0].value) if matches else (False, None)


def _path_text(keys):
    """A list of keys (names and indexes) as path text: plain names dotted, other names and indexes bracketed."""
    text = ""
    for key in keys:
        if isinstance(key, str) and key.isalnum():
            text += ("." if text else "") + key
            continue
        text = text or "$"
        if not isinstance(key, str):
            text += "[%d]" % key
        elif '"' in key:
            text += "['%s']" % key
        else:
            text += '["%s"]' % key
    return text


@functools.lru_cache(maxsize=4096)
def _parse(text):
    parser, parse_error = _parser()
    try:
        return parser.parse(text)
    except parse_error as error:
        raise Exception("Invalid json path '%s'. Error=%s" % (text, error)) from None


@functools.cache
def _parser():
    """jsonpath-ng's extended parser (imported on first use: it takes ~100 ms) and its error class."""
    with warnings.catch_warnings():
        # jsonpath-ng's regexes have invalid escapes, a SyntaxWarning when its sources are compiled.
        warnings.simplefilter("ignore", SyntaxWarning)
        from jsonpath_ng import jsonpath
        from jsonpath_ng.exceptions import JsonPathParserError
        from jsonpath_ng.ext.parser import ExtentedJsonPathParser
    jsonpath.Fields.reified_fields = _glob_fields
    return ExtentedJsonPathParser(), JsonPathParserError


def _glob_fields(fields, datum):
    """The field names a `Fields` step selects in `datum`: each name as is, except that a name containing `*` stands
    for the keys of `datum` (when it is a mapping) that match it as a shell glob."""
    names = []
    for name in fields.fields:
        if "*" not in name:
            names.append(name)
            continue
        try:
            names.extend(key for key in datum.value.keys() if fnmatch.fnmatch(key, name))
        except AttributeError:
            pass
    return tuple(names)
