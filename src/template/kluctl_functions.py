"""The filters and global functions Kluctl adds to Jinja2, with Kluctl's semantics
(docs/kluctl/templating/filters.md and functions.md; behaviour details from kluctl's lib/go-jinja2 kluctl_ext.py and
dict_utils.py). test/conformance/jinja2 compares them with Kluctl's own code.

`load_latest_git_commit` is not provided.
"""

import base64
import hashlib
import json
import sys
import textwrap

import jinja2
from jinja2 import TemplateError, TemplateNotFound

import var_path
from kluctl_images import images_global, version_global
from kluctl_time import time_global
from kluctl_yaml import from_yaml, to_yaml

# Set in the variables of a template that load_sha256 renders, so that its own load_sha256 calls (of itself or of
# templates that load it back) give a placeholder instead of recursing, as Kluctl's docs describe.
_HASHING_MARKER = "__calc_sha256__"


def install(environment):
    """Adds Kluctl's filters and globals to `environment`, over any variable of the same name (Kluctl adds them
    after the project variables: a variable named `images`, `time` or `version` is not seen by templates)."""
    environment.filters.update(
        b64encode=b64encode,
        b64decode=b64decode,
        to_yaml=to_yaml,
        to_json=to_json,
        from_yaml=from_yaml,
        render=render,
        sha256=sha256,
        slugify=slugify,
    )
    environment.globals.update(
        load_template=load_template,
        load_base64=load_base64,
        load_sha256=load_sha256,
        get_var=get_var,
        merge_dict=merge_dict,
        update_dict=update_dict,
        debug_print=debug_print,
        render=render,
        **_values(),
    )
    environment.globals["raise"] = raise_error


def renew_values(environment):
    """Gives `environment` new `time`, `images` and `version` globals: they are dicts, and a template that changes
    one in place (`images.update(...)`) must not change it for the next file rendered with the same environment."""
    environment.globals.update(_values())


def _values():
    return {"time": time_global(), "images": images_global(), "version": version_global()}


def b64encode(text):
    """Base64 of the UTF-8 bytes of `text`."""
    return base64.b64encode(text.encode()).decode()


def b64decode(text):
    """The UTF-8 text encoded as base64 in `text`."""
    return base64.b64decode(text.encode()).decode()


def to_json(value):
    """`value` as JSON with Python's default separators (`{"a": 1}`)."""
    return json.dumps(value)


def sha256(data, digest_len=None):
    """Hex SHA-256 of `data` (text is hashed as UTF-8), cut to `digest_len` characters when given."""
    if not isinstance(data, bytes):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:digest_len]


def slugify(text, **options):
    """python-slugify's slug of `text`, with its keyword arguments (separator, max_length, ...)."""
    from slugify import slugify as python_slugify

    return python_slugify(text, **options)


@jinja2.pass_context
def render(context, source):
    """Renders the string `source` as a template with the current template variables (not loop variables)."""
    return context.environment.from_string(source).render(context.get_all())


@jinja2.pass_context
def load_template(context, path, **variables):
    """Renders the template file `path` (found like an include) with the current variables plus `variables`."""
    template = context.environment.get_template(path, parent=context.name)
    return template.render(merge_dict(context.get_all(), variables))


@jinja2.pass_context
def load_sha256(context, path, digest_len=None):
    """Hex SHA-256 of the rendered template file `path`, cut to `digest_len` characters when given.
    Inside that rendering, load_sha256 returns "__self_sha256__"."""
    if _HASHING_MARKER in context:
        return "__self_sha256__"
    rendered = load_template(context, path, **{_HASHING_MARKER: True})
    return sha256(rendered, digest_len)


@jinja2.pass_context
def load_base64(context, path, width=None):
    """Base64 of the bytes of file `path`, wrapped into lines of `width` characters when given.
    As in Kluctl, `path` is looked up on the search path only (a leading `./` is ignored, not relative)."""
    loader = context.environment.loader
    found = loader.find(path)
    if found is None:
        raise TemplateNotFound(path)
    with open(loader.confined(found, path), "rb") as file:
        encoded = base64.b64encode(file.read()).decode()
    return textwrap.fill(encoded, width=width) if width else encoded


@jinja2.pass_context
def get_var(context, paths, default=None):
    """The value at the first of `paths` (a JSON path, or a list of them) present in the template variables,
    else `default`."""
    variables = context.get_all()
    for path in paths if isinstance(paths, list) else [paths]:
        found, value = var_path.lookup(variables, path)
        if found:
            return value
    return default


def merge_dict(base, overrides, clone=True):
    """Deep-merges `overrides` into a deep copy of `base` (into `base` itself when clone is false) and returns it;
    values of `overrides` win except where both sides hold dicts. None overrides count as an empty dict; a None base
    only when clone is false (copying None fails, as in Kluctl)."""
    if clone:
        base = _clone_dict(base)
    if base is None:
        base = {}
    if overrides is None:
        overrides = {}
    # Keys and item access rather than items(), so that other mappings fail or work as they do in Kluctl.
    for key in overrides:
        value = overrides[key]
        if key in base and isinstance(base[key], dict) and isinstance(value, dict):
            merge_dict(base[key], value, clone=False)
        else:
            base[key] = value
    return base


def update_dict(base, overrides):
    """merge_dict in place into `base`; returns "" so that `{{ update_dict(a, b) }}` prints nothing."""
    merge_dict(base, overrides, clone=False)
    return ""


def raise_error(message):
    """The `raise(msg)` global: fails the rendering with `message`."""
    raise TemplateError(message)


def debug_print(message):
    """Writes `message` to stderr (never stdout, which carries the worker protocol); prints nothing."""
    sys.stderr.write(f"debug_print: {message}\n")
    sys.stderr.flush()
    return ""


def _clone_dict(mapping):
    """Kluctl's copy for merge_dict: a new dict whose values are copied as _clone copies them. `mapping` must have
    items() (None fails with AttributeError, as in Kluctl)."""
    return {key: _clone(item) for key, item in mapping.items()}


def _clone(value):
    """Dicts and other non-text iterables are copied deeply (the latter as lists); anything else is shared."""
    if isinstance(value, dict):
        return _clone_dict(value)
    if _is_collection(value):
        return [_clone(item) for item in value]
    return value


def _is_collection(value):
    if isinstance(value, (list, tuple)):
        return True
    if isinstance(value, (str, bytes, int, type)):
        return False
    try:
        iter(value)
    except Exception:
        return False
    return True
