"""Kluctl's `slugify` filter, which calls python-slugify 8.0.4 with the template's keyword arguments
(docs/kluctl/templating/filters.md). The same steps in the same order are done here so Gantry needs no extra package.

One difference: python-slugify transliterates with text-unidecode, which is not a dependency; here non-ASCII
characters are decomposed (NFKD) and what is not ASCII afterwards is dropped. Accented Latin letters therefore slug
the same ("Café" -> "cafe"), but letters without a decomposition differ ("Straße" gives "strae", not "strasse").
"""

import re
import unicodedata
from html.entities import name2codepoint

_CHAR_ENTITY = re.compile(r"&(%s);" % "|".join(name2codepoint))
_DECIMAL_ENTITY = re.compile(r"&#(\d+);")
_HEX_ENTITY = re.compile(r"&#x([\da-fA-F]+);")
_QUOTES = re.compile(r"'+")
_DISALLOWED = re.compile(r"[^-a-zA-Z0-9]+")
_DISALLOWED_UNICODE = re.compile(r"[\W_]+")
_DASHES = re.compile(r"-{2,}")
_COMMA_IN_NUMBER = re.compile(r"(?<=\d),(?=\d)")
_DASH = "-"


def slugify(
    text,
    entities=True,
    decimal=True,
    hexadecimal=True,
    max_length=0,
    word_boundary=False,
    separator=_DASH,
    save_order=False,
    stopwords=(),
    regex_pattern=None,
    lowercase=True,
    replacements=(),
    allow_unicode=False,
):
    """Returns `text` as a lowercase, dash-separated slug, with python-slugify's arguments and defaults."""
    for old, new in replacements:
        text = text.replace(old, new)
    if not isinstance(text, str):
        text = str(text, "utf-8", "ignore")
    text = _QUOTES.sub(_DASH, text)
    text = _normalize(text, allow_unicode)
    if not allow_unicode:
        text = text.encode("ascii", "ignore").decode("ascii")
    text = _decode_references(text, entities, decimal, hexadecimal)
    text = _normalize(text, allow_unicode)
    if lowercase:
        text = text.lower()
    text = _QUOTES.sub("", text)
    text = _COMMA_IN_NUMBER.sub("", text)
    text = re.sub(regex_pattern or (_DISALLOWED_UNICODE if allow_unicode else _DISALLOWED), _DASH, text)
    text = _DASHES.sub(_DASH, text).strip(_DASH)
    if stopwords:
        excluded = [word.lower() for word in stopwords] if lowercase else list(stopwords)
        text = _DASH.join(word for word in text.split(_DASH) if word not in excluded)
    for old, new in replacements:
        text = text.replace(old, new)
    if max_length > 0:
        text = _truncate(text, max_length, word_boundary, save_order)
    return text.replace(_DASH, separator) if separator != _DASH else text


def _normalize(text, allow_unicode):
    return unicodedata.normalize("NFKC" if allow_unicode else "NFKD", text)


def _decode_references(text, entities, decimal, hexadecimal):
    if entities:
        text = _CHAR_ENTITY.sub(lambda match: chr(name2codepoint[match.group(1)]), text)
    # An out-of-range reference leaves all references of its kind undecoded, as in python-slugify.
    if decimal:
        try:
            text = _DECIMAL_ENTITY.sub(lambda match: chr(int(match.group(1))), text)
        except (ValueError, OverflowError):
            pass
    if hexadecimal:
        try:
            text = _HEX_ENTITY.sub(lambda match: chr(int(match.group(1), 16)), text)
        except (ValueError, OverflowError):
            pass
    return text


def _truncate(text, max_length, word_boundary, save_order):
    """python-slugify's smart_truncate over dash-separated words."""
    text = text.strip(_DASH)
    if len(text) < max_length:
        return text
    if not word_boundary:
        return text[:max_length].strip(_DASH)
    if _DASH not in text:
        return text[:max_length]
    kept = ""
    for word in filter(None, text.split(_DASH)):
        length = len(kept) + len(word)
        if length < max_length:
            kept += word + _DASH
        elif length == max_length:
            kept += word
            break
        elif save_order:
            break
    return (kept or text[:max_length]).strip(_DASH)
