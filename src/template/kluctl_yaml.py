"""YAML for the `to_yaml` and `from_yaml` filters, configured as Kluctl configures PyYAML
(kluctl's lib/go-jinja2 yaml_utils.py)."""

import yaml


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a plain `=` loads as the string "=" instead of failing
    (PyYAML resolves it to the unloadable `tag:yaml.org,2002:value`, yaml/pyyaml#89)."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper with Kluctl's string style: multi-line strings as `|` blocks, digit-only strings
    single-quoted."""


def _represent_str(dumper, text):
    if len(text.splitlines()) > 1:
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    if text.isnumeric():
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text)


_Dumper.add_representer(str, _represent_str)


def from_yaml(text):
    """The first YAML document of `text` as Python values; JSON is accepted too."""
    return yaml.load(text, Loader=_Loader)


def to_yaml(value):
    """`value` as a block-style YAML document in insertion order, ending with a newline."""
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False)
