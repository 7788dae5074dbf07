"""The page shell: head with the inline CSS, a body of sections."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalctl.reports.kit.elements import XHTML_NS, el, serialize

# No `<` or `&` anywhere in the CSS: <style> is raw text in HTML but parsed text in XML, and
# the page must mean the same in both (the serializer checks this).
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1f2328; background: #ffffff; margin: 0; padding: 24px 32px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.meta { color: #59636e; margin: 0 0 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: #59636e; font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #d0d7de;
         vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
            font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; }
.badge { display: inline-block; color: #ffffff; border-radius: 10px; padding: 0 8px;
         font-size: 12px; font-weight: 600; }
.verdict { font-weight: 700; font-size: 16px; }
.note { color: #59636e; }
.warn { color: #9a6700; }
details summary { cursor: pointer; }
.turn { border-left: 3px solid #d0d7de; padding-left: 10px; margin: 8px 0; }
.msg { margin: 4px 0; }
h4 { font-size: 13px; margin: 10px 0 4px; }
svg text { font: 11px system-ui, sans-serif; fill: #59636e; }
"""


def page(title: str, *body: ET.Element | None) -> str:
    """The whole document: head with inline CSS, then `body`."""
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", title),
        el("style", CSS),
    )
    return serialize(el("html", head, el("body", *body), xmlns=XHTML_NS, lang="en"))


def section(title: str, *children: ET.Element | str | None, id_: str | None = None) -> ET.Element:
    return el("section", el("h2", title), *children, id=id_)
