"""Elements and the one serializer every page goes through.

The page is built as an element tree and written by a small serializer rather than by
string templates: every text and attribute goes through one escaping function, so a case
key or a model answer holding `<script>` cannot inject markup. The output is well-formed
XML as well as HTML (void elements self-closed, every other element closed explicitly), so
tests can check it with a strict XML parser.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
SVG_NS = "http://www.w3.org/2000/svg"  # a namespace name, never fetched
XHTML_NS = "http://www.w3.org/1999/xhtml"


def el(tag: str, *children: ET.Element | str | None, **attrs: Any) -> ET.Element:
    """An element with text/element children; `class_` and `data_x` spell `class`, `data-x`."""
    element = ET.Element(tag, {_attr_name(k): str(v) for k, v in attrs.items() if v is not None})
    last: ET.Element | None = None
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            if last is None:
                element.text = (element.text or "") + child
            else:
                last.tail = (last.tail or "") + child
        else:
            element.append(child)
            last = child
    return element


def _attr_name(name: str) -> str:
    return name.rstrip("_").replace("_", "-")


def _escape(text: str, *, quote: bool) -> str:
    text = _NOT_XML.sub("\ufffd", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;") if quote else text


def serialize(root: ET.Element) -> str:
    out: list[str] = ["<!DOCTYPE html>\n"]
    _write(root, out)
    out.append("\n")
    return "".join(out)


def _write(element: ET.Element, out: list[str]) -> None:
    tag = str(element.tag)
    attrs = "".join(f' {k}="{_escape(v, quote=True)}"' for k, v in element.attrib.items())
    if tag in _VOID:
        if element.text or len(element):
            raise ValueError(f"<{tag}> is a void element and cannot have content")
        out.append(f"<{tag}{attrs} />")
        return
    out.append(f"<{tag}{attrs}>")
    if element.text:
        if tag == "style":
            if "<" in element.text or "&" in element.text:
                raise ValueError("CSS must not contain '<' or '&' (it must parse as XML too)")
            out.append(element.text)
        else:
            out.append(_escape(element.text, quote=False))
    for child in element:
        _write(child, out)
        if child.tail:
            out.append(_escape(child.tail, quote=False))
    out.append(f"</{tag}>")
