"""Gantry's Jinja2 worker: a long-lived process rendering templates as Kluctl does, one request at a time.

Protocol, one JSON document per line in each direction (README.md has the details):
  request   {"id", "rootDir", "context", "files": [path, ...]}                        paths relative to rootDir
         or {"id", "rootDir", "context", "templates": [{"name", "source", "dir"}, ...]}
            either may carry "searchDirs": [dir, ...] (relative to rootDir) to replace the default search path,
            and "timeLimitSeconds", each entry's render time limit (default render_limits.DEFAULT_TIME_LIMIT_SECONDS)
  response  {"id", "results": [...]} with one entry per file/template, in request order:
            {"path" or "name", "text"} or {"path" or "name", "error": {"file", "line", "message", "expression"}}
         or {"id", "error": message} when the request itself is malformed.
Only responses are written to stdout; debug_print and anything else a rendering prints goes to stderr.
Arguments: `--code-cache DIR` keeps compiled template code in DIR for later workers (rendering.use_code_cache).
"""

import json
import resource
import signal
import sys

# A terminal's Ctrl-C reaches every process of its group: the worker would die printing a KeyboardInterrupt
# traceback. Its parent decides when it stops (by closing stdin), so it ignores SIGINT, from before its imports on.
signal.signal(signal.SIGINT, signal.SIG_IGN)

import render_limits
import rendering


# Node reads each response as one line: a line of gigabytes would exhaust its string limit before any error could
# be reported. A rendered text larger than MAX_TEXT_CHARS becomes that entry's error (naming its file); a response
# larger than MAX_RESPONSE_CHARS all the same (many large entries) is replaced by an error.
MAX_TEXT_CHARS = 64 * 1024 * 1024
MAX_RESPONSE_CHARS = 128 * 1024 * 1024


# What still grows after the sandbox's and render_limits' checks (a list appended to in a loop) fails with
# MemoryError here instead of taking the host's memory.
MAX_ADDRESS_SPACE_BYTES = 4 * 1024 * 1024 * 1024


def main():
    cap_address_space()
    if sys.argv[1:2] == ["--code-cache"] and len(sys.argv) == 3:
        try:
            rendering.use_code_cache(sys.argv[2])
        except OSError as error:
            print(f"not keeping compiled templates in {sys.argv[2]}: {error}", file=sys.stderr)
    responses = sys.stdout
    # Whatever else prints (a warning, a helper) must not land between responses.
    sys.stdout = sys.stderr
    sys.stdin.reconfigure(encoding="utf-8")
    for line in sys.stdin:
        if line.strip():
            responses.write(bounded(answer(line)) + "\n")
            responses.flush()


def cap_address_space():
    """Lowers the address space limit to MAX_ADDRESS_SPACE_BYTES (never raises one already lower)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MAX_ADDRESS_SPACE_BYTES if hard == resource.RLIM_INFINITY else min(hard, MAX_ADDRESS_SPACE_BYTES)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def bounded(response):
    """The response as one JSON line, or an error response when that line would be too long."""
    text = json.dumps(response)
    if len(text) <= MAX_RESPONSE_CHARS:
        return text
    return json.dumps({"id": response.get("id"), "error": f"the rendered text is larger than {MAX_RESPONSE_CHARS // (1024 * 1024)} MiB"})


def answer(line):
    """The response to one request line; never raises, whatever the line holds."""
    request_id = None
    try:
        request = json.loads(line)
        request_id = request["id"]
        return {"id": request_id, "results": render_batch(request)}
    except Exception as error:
        return {"id": request_id, "error": f"invalid request: {type(error).__name__}: {error}"}


def render_batch(request):
    """Renders every file or template of `request` with its context; failures are per entry."""
    root_dir, search_dirs = request["rootDir"], request.get("searchDirs")
    time_limit = request.get("timeLimitSeconds", render_limits.DEFAULT_TIME_LIMIT_SECONDS)
    variables = rendering.kluctl_variables(request["context"])
    if "files" in request:
        results = rendering.render_files(root_dir, request["files"], variables, search_dirs, time_limit)
        return [capped(result, "path") for result in results]
    results = rendering.render_strings(root_dir, request["templates"], variables, search_dirs, time_limit)
    return [capped(result, "name") for result in results]


def capped(result, label):
    """`result`, or an error naming its file when its text is larger than MAX_TEXT_CHARS."""
    if len(result.get("text", "")) <= MAX_TEXT_CHARS:
        return result
    message = f"the rendered text is larger than {MAX_TEXT_CHARS // (1024 * 1024)} MiB"
    return {label: result[label], "error": {"file": result[label], "line": None, "message": message, "expression": None}}


if __name__ == "__main__":
    main()
