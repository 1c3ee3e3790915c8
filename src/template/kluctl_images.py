"""The `images` and `version` globals of Kluctl templates, as Kluctl's images extension defines them
(docs/kluctl/deployments/images.md; behaviour from kluctl's pkg/kluctl_jinja2/ext/images_ext.py).

`images.get_image(image)` cannot know the image yet: which one is deployed is decided after rendering (fixed images,
the image already deployed, ...). It returns a placeholder that carries the image name, and Gantry's TypeScript
side (image-placeholder.ts) finds the placeholders in the rendered objects and replaces them.
"""

import base64
import json

# Must stay equal to BEGIN and END in image-placeholder.ts.
PLACEHOLDER_BEGIN = "XXXXXbegin_get_image_"
PLACEHOLDER_END = "_end_get_imageXXXXX"


def get_image(image):
    """PLACEHOLDER_BEGIN + standard padded base64 of the UTF-8 JSON `{"image": image}` (Python's json.dumps, so
    non-ASCII is \\u-escaped) + PLACEHOLDER_END."""
    payload = json.dumps({"image": image}).encode("utf-8")
    return PLACEHOLDER_BEGIN + base64.b64encode(payload).decode("ascii") + PLACEHOLDER_END


def images_global():
    """The value of the `images` global; a mapping, so `images.get_image` and `images["get_image"]` both work."""
    return {"get_image": get_image}


def version_global():
    """The value of the `version` global: the version filters of Kluctl's old image configuration, which only
    return their own call as text (e.g. `semver(allow_no_nums=False)`)."""
    return {
        "semver": lambda allow_no_nums=False: "semver(allow_no_nums=%s)" % allow_no_nums,
        "prefix": _prefix,
        "number": lambda: "number()",
        "regex": lambda pattern: 'regex("%s")' % pattern,
    }


def _prefix(text, suffix=None):
    if suffix is None:
        return 'prefix("%s")' % text
    return 'prefix("%s", suffix="%s")' % (text, suffix)
