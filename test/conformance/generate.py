"""Writes the expected results of the Jinja2 conformance corpus (jinja2/*.yaml) by rendering every case with
Kluctl's own templating code, set up as Kluctl sets it up. Run by hand (see README.md), never by the tests:

    python generate.py KLUCTL_SRC [CASE_NAME_SUBSTRING]

KLUCTL_SRC is a folder holding kluctl's lib/go-jinja2/python_src and pkg/kluctl_jinja2 (exported from a kluctl
checkout, outside this repository); the Python running this script needs the packages kluctl's
lib/go-jinja2/internal/requirements.txt pins. With a name substring, only matching cases are rendered and printed;
nothing is written.

What "as Kluctl sets it up" means here, from kluctl's Go side (lib/go-jinja2, pkg/kluctl_jinja2/jinja2.go):
- kluctl's renderer process (python_src/main.py) renders, speaking its JSON-lines protocol, one command per case;
- the extensions are those pkg/kluctl_jinja2/jinja2.go passes with x.WithExtension, in that order; strict mode;
  trim_blocks and lstrip_blocks off;
- the variables are the globals, JSON-encoded as Go's encoding/json encodes a map: keys sorted, and a float without
  a fraction written as an integer;
- a file (or string) without any `{` is returned unchanged without reaching Python, as jinja2_renderer.go does;
- files are rendered by absolute path with absolute search dirs: the case's `searchDirs`, else the rendered file's
  folder and each parent up to the case root (Gantry's default), so both sides search the same folders.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_DIR = os.path.join(HERE, "jinja2")
DEFAULT_FILE = "template.yml"
ROOT_MARK = "<root>"
HEADER = (
    "# Jinja2 conformance cases (see test/conformance/README.md). Inputs are written by hand; the expected* fields\n"
    "# are written by test/conformance/generate.py from Kluctl's own templating code. Do not edit them by hand.\n"
)
# Field order of a case as written back.
FIELDS = (
    "name", "note", "mode", "searchDirs", "files", "render", "template", "vars",
    "expected", "expectedPattern", "expectedError", "gantryLocation",
)
INPUT_FIELDS = {"name", "note", "mode", "template", "files", "render", "searchDirs", "vars", "expectedPattern",
                "gantryLocation", "expected", "expectedError"}
FRAME = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in .*$')
CARETS = re.compile(r"^\s+[\^~]+\s*$")


class CaseLoader(yaml.SafeLoader):
    """PyYAML's safe loader without timestamps: dates stay strings, as in Gantry's YAML reading (src/yaml.ts)."""


CaseLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class CaseDumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks where YAML allows it, so templates and outputs stay readable, and
    quotes every string that some YAML reader could take for another type (a number in YAML 1.2, `y` or `n` as a
    YAML 1.1 boolean), so that the test, reading with another YAML library, sees the values rendered here."""


# Plain scalars that are strings for PyYAML but may not be for other readers.
AMBIGUOUS = re.compile(r"^[-+.~0-9]|^(y|n|yes|no|on|off|true|false|null)$", re.IGNORECASE)


def _represent_text(dumper, text):
    style = "|" if "\n" in text else ("'" if AMBIGUOUS.match(text) else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


CaseDumper.add_representer(str, _represent_text)


class KluctlRenderer:
    """kluctl's renderer process (python_src/main.py), driven as lib/go-jinja2/jinja2_renderer.go drives it."""

    def __init__(self, kluctl_src):
        python_src = os.path.join(kluctl_src, "lib", "go-jinja2", "python_src")
        extension_dir = os.path.join(kluctl_src, "pkg", "kluctl_jinja2")
        self.extensions = _kluctl_extensions(os.path.join(extension_dir, "jinja2.go"))
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join([python_src, extension_dir]))
        self.process = subprocess.Popen(
            [sys.executable, "-B", os.path.join(python_src, "main.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment, text=True, encoding="utf-8",
        )
        self._command("init", [], {})

    def render(self, template, is_string, search_dirs, variables):
        """Kluctl's result for one file path (or template string): {"result": text} or {"error": text}."""
        text = template if is_string else _read_text(template)
        if "{" not in text:
            return {"result": text}
        options = {
            "nonStrict": False,
            "trimBlocks": False,
            "lstripBlocks": False,
            "searchDirs": search_dirs,
            "globals": variables,
            "extensions": self.extensions,
        }
        [result] = self._command("render-strings" if is_string else "render-files", [template], options)
        return result

    def close(self):
        self._command("exit", [], {}, answered=False)
        self.process.wait(timeout=10)

    def _command(self, name, templates, options, answered=True):
        self.process.stdin.write(json.dumps({"cmd": name, "templates": templates, "opts": options}) + "\n")
        self.process.stdin.flush()
        if not answered:
            return None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"kluctl's renderer exited while answering {name}")
        return json.loads(line).get("templateResults", [])


def _kluctl_extensions(jinja2_go):
    with open(jinja2_go, encoding="utf-8") as file:
        extensions = re.findall(r'WithExtension\("([^"]+)"\)', file.read())
    if not extensions:
        raise SystemExit(f"{jinja2_go}: no x.WithExtension(...) found; has kluctl's setup changed?")
    return extensions


def _read_text(path):
    with open(path, encoding="utf-8", newline="") as file:
        return file.read()


def go_json_value(value):
    """`value` as it reaches kluctl's renderer after Go's json.Marshal: map keys sorted, integral floats as ints."""
    if isinstance(value, dict):
        return {key: go_json_value(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [go_json_value(item) for item in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def case_files(case):
    """The case's file tree: `files`, plus `template` written to `render` (default template.yml)."""
    files = dict(case.get("files") or {})
    if "template" in case and case.get("mode") != "string":
        files[case.get("render", DEFAULT_FILE)] = case["template"]
    return files


def default_search_dirs(root, rendered):
    """Gantry's default search path: the rendered file's folder, then each parent up to the root."""
    folder = os.path.dirname(os.path.join(root, rendered))
    dirs = [folder]
    while os.path.normpath(folder) != os.path.normpath(root):
        folder = os.path.dirname(folder)
        dirs.append(folder)
    return [os.path.normpath(directory) for directory in dirs]


def render_case(renderer, case):
    """Kluctl's outcome for `case`: ("text", text) or ("error", {"message", "file"?, "line"?, "source"?})."""
    with tempfile.TemporaryDirectory(prefix="kluctl-conformance-") as scratch:
        root = os.path.join(os.path.realpath(scratch), "root")
        os.makedirs(root)
        for path, content in case_files(case).items():
            target = os.path.join(root, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="") as file:
                file.write(content)
        is_string = case.get("mode") == "string"
        rendered = case.get("render", DEFAULT_FILE)
        if "searchDirs" in case:
            search_dirs = [os.path.normpath(os.path.join(root, directory)) for directory in case["searchDirs"]]
        else:
            search_dirs = [root] if is_string else default_search_dirs(root, rendered)
        template = case["template"] if is_string else os.path.join(root, rendered)
        variables = go_json_value(json.loads(json.dumps(case.get("vars") or {})))
        result = renderer.render(template, is_string, search_dirs, variables)
        if "result" in result:
            return "text", result["result"]
        return "error", parse_kluctl_error(result["error"], root)


def parse_kluctl_error(text, root):
    """Splits the error text of kluctl's extract_template_error into the template frame it shows (file relative to
    the case root, line, source line) and the message after it. A text without a template frame (a template that
    was not found, or a full Python traceback) gives the message alone. Paths in the message are written relative
    to `<root>`, the case root."""
    # A located error and a traceback end with the newline print() added after the message.
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    if text.startswith("Traceback (most recent call last):"):
        last = max(index for index, line in enumerate(lines) if FRAME.match(line))
        rest = lines[last + 1:]
        while rest and (rest[0].startswith("    ") or CARETS.match(rest[0])):
            rest = rest[1:]
        return {"message": normalize_paths("\n".join(rest), root)}
    frame = FRAME.match(lines[0])
    if not frame:
        return {"message": normalize_paths(text, root)}
    file = frame.group("file")
    if file.startswith(root + os.sep):
        file = os.path.relpath(file, root)
    error = {"file": file, "line": int(frame.group("line"))}
    rest = lines[1:]
    if rest and rest[0].startswith("    "):
        error["source"] = rest[0].strip()
        rest = rest[1:]
    while rest and CARETS.match(rest[0]):
        rest = rest[1:]
    return {"message": normalize_paths("\n".join(rest), root), **error}


def normalize_paths(message, root):
    """`message` with the case root written as `<root>` and its parent as `<root>/..` (the case root is a folder
    `root` inside a temporary folder), so that messages naming files do not depend on where the case ran."""
    return message.replace(root, ROOT_MARK).replace(os.path.dirname(root), ROOT_MARK + "/..")


def apply_outcome(case, outcome, source_name):
    """Writes Kluctl's outcome into the case's expected fields; fails on a case Kluctl's result contradicts."""
    kind, value = outcome
    name = f"{source_name}: {case['name']}"
    case.pop("expected", None)
    case.pop("expectedError", None)
    if "expectedPattern" in case:
        if kind != "text" or not re.fullmatch(case["expectedPattern"], value):
            raise SystemExit(f"{name}: Kluctl's result {value!r} does not match expectedPattern")
        return
    if kind == "text":
        case["expected"] = value
        return
    case["expectedError"] = value
    if "file" not in value and "gantryLocation" not in case:
        raise SystemExit(
            f"{name}: Kluctl's error names no template location ({value['message']!r}); give Gantry's expected "
            f"location as gantryLocation: {{file, line}}"
        )


def ordered(case):
    unknown = set(case) - INPUT_FIELDS
    if unknown:
        raise SystemExit(f"{case.get('name')}: unknown fields {sorted(unknown)}")
    return {field: case[field] for field in FIELDS if field in case}


def load_corpus_file(path):
    with open(path, encoding="utf-8") as file:
        cases = yaml.load(file, Loader=CaseLoader) or []
    names = [case["name"] for case in cases]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise SystemExit(f"{path}: duplicate case names {sorted(duplicates)}")
    return cases


def write_corpus_file(path, cases):
    body = yaml.dump([ordered(case) for case in cases], Dumper=CaseDumper, sort_keys=False, allow_unicode=True,
                     width=float("inf"), default_flow_style=False)
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(HEADER + body)


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    kluctl_src, only = arguments[0], (arguments[1] if len(arguments) > 1 else None)
    renderer = KluctlRenderer(os.path.abspath(kluctl_src))
    try:
        for file_name in sorted(os.listdir(CORPUS_DIR)):
            if not file_name.endswith(".yaml"):
                continue
            path = os.path.join(CORPUS_DIR, file_name)
            cases = load_corpus_file(path)
            for case in cases:
                if only is not None and only not in case["name"]:
                    continue
                outcome = render_case(renderer, case)
                if only is not None:
                    print(f"--- {file_name}: {case['name']}\n{json.dumps(outcome, ensure_ascii=False, indent=2)}")
                    continue
                apply_outcome(case, outcome, file_name)
            if only is None:
                write_corpus_file(path, cases)
                print(f"{file_name}: {len(cases)} cases")
    finally:
        renderer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
