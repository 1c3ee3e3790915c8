"""Renders project files and strings with Jinja2 the way Kluctl does (kluctl's lib/go-jinja2 and
docs/kluctl/templating/README.md):

- StrictUndefined, trim_blocks and lstrip_blocks off, one trailing newline dropped, the loopcontrols extension and
  Kluctl's filters and globals;
- the variables are the environment's *globals*, not render arguments, so macros of imported templates see them;
- a name given to include/import/extends/load_template is looked up in the search dirs, in order (by default the
  rendered file's own folder, then each parent folder up to the project root; the same for every template included
  along the way), except that `./x` and `../x` are relative to the including template;
- a file or string without any `{` is returned unchanged, without going through Jinja2 at all.

The entries of one request that share a search path share one Environment, as Kluctl renders a whole batch with one
(go-jinja2's Jinja2Renderer.render_helper): loader, globals and filters are set up once, and an included template is
loaded once per request. Each entry still starts as if the Environment were new: no module of an `{% import %}`ed
template and no `time`, `images` or `version` global a template changed in place is carried over (Kluctl would carry
imported modules over within its batch, but Gantry splits batches over workers, so the result would depend on the
split). The variables themselves are shared by the renderings of one request, as Kluctl shares them within one
render batch: a template that changes a variable in place (update_dict on it, `.append`) changes it for the files
rendered after it in the same request, and for no other request. Compiled template code is kept across requests:
per template file keyed by its source text, so a changed file is recompiled and an unchanged one never is; with a
code cache folder (the CLI's, see use_code_cache), also across processes, since compiling is most of Jinja2's time.
"""

import collections
import functools
import hashlib
import os
import posixpath
import re
import sys
import traceback

import jinja2
from jinja2 import BaseLoader, BytecodeCache, FileSystemBytecodeCache, StrictUndefined, TemplateNotFound
from jinja2.loaders import split_template_path
from jinja2.sandbox import SandboxedEnvironment

import kluctl_functions
import render_limits

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

_SETTINGS = dict(
    undefined=StrictUndefined,
    trim_blocks=False,
    lstrip_blocks=False,
    keep_trailing_newline=False,
    extensions=["jinja2.ext.loopcontrols"],
)


def render_files(root_dir, paths, variables, search_dirs=None, time_limit=render_limits.DEFAULT_TIME_LIMIT_SECONDS):
    """Renders each file of `paths` (relative to `root_dir`) with `variables` (a dict) as the template globals.

    `search_dirs` (relative to root_dir) replaces the default search path when given. Each file renders for at most
    `time_limit` seconds (render_limits). No file is read whose real path (symlinks followed) leaves root_dir.
    Returns one {"path", "text"} per path, in order, or {"path", "error": {"file", "line", "message", "expression"}}
    where rendering fails.
    """
    root_dir = os.path.abspath(root_dir)
    environments = _Environments(root_dir, variables, search_dirs)
    return [_render_file(root_dir, path, environments, time_limit) for path in paths]


def _render_file(root_dir, path, environments, time_limit):
    absolute = os.path.normpath(os.path.join(root_dir, path))
    environment = environments.for_folder(os.path.dirname(absolute))
    try:
        with open(environment.loader.confined(absolute, path), "rb") as file:
            raw = file.read()
        if b"{" not in raw:
            return {"path": path, "text": raw.decode("utf-8")}
        environment.start(root_template=absolute, root_source=_template_text(raw))
        with render_limits.time_limit(time_limit):
            # Not through the template cache: a file is rendered once, and would only push the templates it includes
            # out of the cache.
            template = environment.loader.load(environment, absolute, environment.make_globals(None))
            return {"path": path, "text": template.render()}
    except Exception as error:
        return {"path": path, "error": describe_error(error, environment.loader.sources, root_dir, path)}


def render_strings(root_dir, templates, variables, search_dirs=None, time_limit=render_limits.DEFAULT_TIME_LIMIT_SECONDS):
    """Renders each of `templates` ({"name", "source", "dir"}: a label for errors, the template text, and the folder,
    relative to `root_dir`, whose search path applies) with `variables` as the template globals.

    Returns one {"name", "text"} or {"name", "error": {...}} per template, in order, as render_files does, with the
    same time limit and confinement.
    """
    root_dir = os.path.abspath(root_dir)
    environments = _Environments(root_dir, variables, search_dirs)
    return [_render_string(root_dir, template, environments, time_limit) for template in templates]


def _render_string(root_dir, template, environments, time_limit):
    name, source = template["name"], template["source"]
    if "{" not in source:
        return {"name": name, "text": source}
    environment = environments.for_folder(os.path.normpath(os.path.join(root_dir, template.get("dir", "."))))
    sources = environment.loader.sources
    sources[name] = source
    try:
        environment.start(root_template=None, root_source=None)
        with render_limits.time_limit(time_limit):
            compiled = environment.template_class.from_code(
                environment, _compile_string(source, name), environment.make_globals(None), None
            )
            return {"name": name, "text": compiled.render()}
    except Exception as error:
        return {"name": name, "error": describe_error(error, sources, root_dir, name)}


def kluctl_variables(context):
    """The template variables as Kluctl's templates see `context` (parsed JSON): with the keys of every mapping in
    sorted order. Kluctl hands its variables to Python as Go's json.Marshal writes them, which sorts map keys, so
    `{% for k in labels %}`, `{{ labels }}` and `labels | to_yaml` see key order, not the order of the project's
    YAML (nor JavaScript's, which puts integer-like keys first)."""
    if isinstance(context, dict):
        return {key: kluctl_variables(context[key]) for key in sorted(context)}
    if isinstance(context, list):
        return [kluctl_variables(item) for item in context]
    return context


def describe_error(error, sources, root_dir, fallback_file):
    """Where and why a rendering failed: the innermost frame of a template we loaded (an included template's own
    file and line when the error is inside it), the message as Kluctl words it, and that line's text.

    `sources` maps template file names to their text; `fallback_file` is named when no template frame exists
    (e.g. the file itself is missing). Returns {"file", "line", "message", "expression"}; line is 1-based or None.
    """
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in sources]
    if not frames:
        return {"file": fallback_file, "line": None, "message": _message(error), "expression": None}
    filename, line = frames[-1].filename, frames[-1].lineno
    # Lines as Jinja counts them (str.splitlines would also split at form feeds and other separators).
    lines = _LINE_BREAK.split(sources[filename])
    expression = lines[line - 1].strip() if 0 < line <= len(lines) else None
    shown = os.path.relpath(filename, root_dir) if filename.startswith(root_dir + os.sep) else filename
    return {"file": shown, "line": line, "message": _message(error), "expression": expression}


def _message(error):
    """Kluctl's text for the error (lib/go-jinja2 jinja2_utils.extract_template_error): `template X not found` for a
    missing template, else the exception's class name and text, e.g. `UndefinedError: 'x' is undefined`."""
    if isinstance(error, TemplateNotFound):
        return f"template {error} not found"
    if isinstance(error, OSError) and error.strerror and error.filename:
        return f"cannot read {error.filename}: {error.strerror}"
    return f"{type(error).__name__}: {error}"


def _template_text(raw):
    """The text of a template file's bytes as Python's text mode reads it, which is how Kluctl reads templates:
    UTF-8, with \r\n and \r as \n."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _search_dirs(root_dir, folder, explicit):
    if explicit is not None:
        return [os.path.normpath(os.path.join(root_dir, directory)) for directory in explicit]
    relative = os.path.relpath(folder, root_dir)
    outside = relative == os.pardir or relative.startswith(os.pardir + os.sep)
    parts = [] if relative == os.curdir or outside else relative.split(os.sep)
    return [os.path.join(root_dir, *parts[:depth]) for depth in range(len(parts), -1, -1)]


class _Environments:
    """The Environments of one batch: one for each search path, made when first needed."""

    def __init__(self, root_dir, variables, search_dirs):
        self._root_dir = root_dir
        self._variables = variables
        self._explicit = search_dirs
        self._by_folder = {}
        self._by_search_path = {}

    def for_folder(self, folder):
        """The Environment for a template in `folder` (absolute)."""
        environment = self._by_folder.get(folder)
        if environment is None:
            search_dirs = _search_dirs(self._root_dir, folder, self._explicit)
            environment = self._by_search_path.get(tuple(search_dirs))
            if environment is None:
                environment = _environment(SearchPathLoader(search_dirs, self._root_dir), self._variables)
                self._by_search_path[tuple(search_dirs)] = environment
            self._by_folder[folder] = environment
        return environment


class KluctlEnvironment(SandboxedEnvironment):
    """Jinja's sandboxed Environment with Kluctl's relative names, with compiled string templates reused, and
    reusable for the entries of a batch.

    Kluctl renders with a plain Environment, where `{{ lipsum.__globals__.os.popen('id').read() }}` runs a command.
    Jinja2's sandbox refuses attributes that start with `_` and the internals of functions, methods, frames and
    generators (`__globals__`, `__subclasses__`, `mro`, ...), reads `str.format` fields through the same checks, and
    caps `range()`; Kluctl's filters and globals are plain functions, which it calls. Its `*` and `**` are also
    bounded (render_limits.check_binop), since one such C call can run for minutes."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context, operator, left, right):
        render_limits.check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def start(self, root_template, root_source):
        """Readies the Environment for the next entry of its batch (the file `root_template` with the text
        `root_source`, or None and None for a string) as a new Environment would be, but with the templates it has
        loaded."""
        self.loader.root_template = root_template
        self.loader.root_source = root_source
        kluctl_functions.renew_values(self)
        # Jinja keeps the module of a template imported without context on the template, which stays in the cache.
        for template in self.cache.values():
            template._module = None

    def make_globals(self, d):
        """The Environment's globals themselves unless a template has globals of its own (`d`; none here has): Jinja
        would layer them in a ChainMap, which every rendering then copies key by key, slowly."""
        return super().make_globals(d) if d else self.globals

    def join_path(self, template, parent):
        """`./x` and `../x` name a file relative to the including template `parent`, as Kluctl's docs define;
        other names are left for the search path. (Jinja asks only when there is a parent: in a string template,
        `./x` is looked up on the search path, where it means `x`.)"""
        if template.startswith(("./", "../")):
            return posixpath.normpath(posixpath.join(posixpath.dirname(parent), template))
        return template

    def from_string(self, source, globals=None, template_class=None):
        """As Jinja's; used by Kluctl's `render`, which templates call with the same snippets again and again."""
        cls = template_class or self.template_class
        return cls.from_code(self, _compile_string(source, None), self.make_globals(globals), None)


class SearchPathLoader(BaseLoader):
    """Finds templates as Kluctl's loader does: the root template by its own path, an absolute name only inside a
    search dir, any other name in the first search dir holding it. Remembers each source it served in `sources`
    (file name -> text) for error reports. The root template's text is given (`root_source`): it was read already.

    Unlike Kluctl's, it serves no file whose real path (symlinks followed) leaves `root_dir`, the project or source
    root: a symlink in the project must not make a template of the host's files (see confined)."""

    def __init__(self, search_dirs, root_dir):
        self.search_dirs = search_dirs
        self.root_dir = root_dir
        self.root_template = None
        self.root_source = None
        self.sources = {}

    def confined(self, path, name):
        """`path` (absolute), when its real path is inside root_dir.
        Raises OutsideRootError naming `name` and the symlink that leads out (with where it points) otherwise."""
        real_root = os.path.realpath(self.root_dir)
        if _is_inside(real_root, os.path.realpath(path)):
            return path
        link = _first_link_leaving(self.root_dir, real_root, path)
        how = f" through the symlink '{os.path.relpath(link, self.root_dir)}' -> '{os.readlink(link)}'" if link else ""
        raise OutsideRootError(f"'{name}' leads outside the project{how}")

    def find(self, name):
        """The file `name` refers to, or None. Raises TemplateNotFound for names that climb out with `..`."""
        if name == self.root_template:
            return name
        if os.path.isabs(name):
            name = os.path.abspath(name)
            return name if any(name.startswith(directory + os.sep) for directory in self.search_dirs) else None
        pieces = split_template_path(name)
        for directory in self.search_dirs:
            candidate = os.path.join(directory, *pieces)
            if os.path.isfile(candidate):
                return candidate
        return None

    def get_source(self, environment, template):
        path = self.find(template)
        if path is None:
            raise TemplateNotFound(template)
        path = self.confined(os.path.normpath(path), template)
        if path == self.root_template:
            source = self.root_source
        else:
            try:
                with open(path, "rb") as file:
                    source = _template_text(file.read())
            except OSError:
                raise TemplateNotFound(template)
        self.sources[path] = source
        # The cached template stays valid for the batch (its files do not change meanwhile), except where `template`
        # was found only as the file being rendered: for the next file, the name is looked up again.
        uptodate = (lambda: self.root_template == template) if template == self.root_template else None
        return source, path, uptodate


class OutsideRootError(Exception):
    """A template or file a template names resolves outside the project root."""


def _is_inside(root, path):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _first_link_leaving(root, real_root, path):
    """The first symlink on the way from `root` to `path` whose real path is outside `real_root`, or None."""
    current = root
    for part in os.path.relpath(path, root).split(os.sep):
        current = os.path.join(current, part)
        if os.path.islink(current) and not _is_inside(real_root, os.path.realpath(current)):
            return current
    return None


class CompiledCodeCache(BytecodeCache):
    """Compiled template code per template name and file, valid while the source text is unchanged: the newest
    MAX_ENTRIES in memory (a long-running worker sees new snapshot folders with every commit, so an unbounded cache
    would only grow), and, once use_disk was called, in a folder for the next process, as Jinja2's
    FileSystemBytecodeCache keeps it (one file per template, replaced when its text changes, written atomically)."""

    MAX_ENTRIES = 8192

    def __init__(self):
        self._entries = collections.OrderedDict()
        self._disk = None

    def use_disk(self, directory):
        """Also keeps code in `directory`, in a subfolder for this worker's code, Jinja2 and Python: compiled code
        depends on the Environment's settings, filters and extensions, which may change with either."""
        folder = os.path.join(directory, _code_version())
        os.makedirs(folder, mode=0o700, exist_ok=True)
        self._disk = FileSystemBytecodeCache(folder)

    def load_bytecode(self, bucket):
        entry = self._entries.get(bucket.key)
        if entry is not None and entry[0] == bucket.checksum:
            self._entries.move_to_end(bucket.key)
            bucket.code = entry[1]
        elif self._disk is not None:
            # Jinja2 checks the file's magic and checksum, and leaves the bucket empty when they do not match.
            self._disk.load_bytecode(bucket)
            if bucket.code is not None:
                self._remember(bucket)

    def dump_bytecode(self, bucket):
        self._remember(bucket)
        if self._disk is not None:
            try:
                self._disk.dump_bytecode(bucket)
            except OSError:
                pass  # A folder that cannot be written makes the next process compile again, nothing worse.

    def _remember(self, bucket):
        self._entries[bucket.key] = (bucket.checksum, bucket.code)
        self._entries.move_to_end(bucket.key)
        while len(self._entries) > self.MAX_ENTRIES:
            self._entries.popitem(last=False)


_FILE_CODE = CompiledCodeCache()


def use_code_cache(directory):
    """Keeps compiled template code in `directory` too, for the processes after this one (see CompiledCodeCache)."""
    _FILE_CODE.use_disk(directory)


def _code_version():
    """A name for what compiled code depends on besides the template: this module and Kluctl's functions (settings,
    filters, extensions), Jinja2's version and Python's."""
    digest = hashlib.sha256(f"{jinja2.__version__} {sys.version}".encode())
    for module in (__file__, kluctl_functions.__file__):
        with open(module, "rb") as file:
            digest.update(file.read())
    return digest.hexdigest()[:16]


def _environment(loader, variables):
    environment = KluctlEnvironment(loader=loader, bytecode_cache=_FILE_CODE, **_SETTINGS)
    environment.globals.update(variables)
    kluctl_functions.install(environment)
    return environment


@functools.lru_cache(maxsize=4096)
def _compile_string(source, filename):
    # Compiled code does not depend on the Environment instance, only on its settings, filters and tests: the
    # compiler is configured exactly like every rendering's Environment.
    return _compiler().compile(source, None, filename)


@functools.cache
def _compiler():
    return _environment(SearchPathLoader([], os.sep), {})
