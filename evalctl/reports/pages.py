"""`evalctl report FILE --html`: the page for a result document, chosen by its `kind`.

Pages only render: a run's comparison with a baseline is computed by the command and
passed in, so no renderer runs a comparison (or anything else).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from evalctl.baselines.comparison import Comparison
from evalctl.errors import BadInputError
from evalctl.reports.crash_page import crash_page
from evalctl.reports.run_page import run_page
from evalctl.reports.soak_page import soak_page
from evalctl.results.document import Document
from evalctl.results.io import run_from_document
from evalctl.stability.models import crash_from_document, soak_from_document


def document_kind(doc: Document) -> str | None:
    """The `kind` a result document declares (run, soak, crash-test), else what it looks like."""
    raw_kind = doc.data.get("kind")
    return raw_kind if isinstance(raw_kind, str) else doc.kind


R = TypeVar("R")


def renderer_for(doc: Document, renderers: Mapping[str, R], what: str) -> R:
    """The renderer registered for `doc`'s kind; else a BadInputError naming the kinds that
    have a `what` (HTML, Markdown) report."""
    kind = document_kind(doc)
    render = renderers.get(kind or "")
    if render is None:
        known = ", ".join(sorted(renderers))
        raise BadInputError(
            f"no {what} report for {'kind ' + repr(kind) if kind else 'this document'} "
            f"(reports exist for: {known})",
            file=str(doc.path),
            field="kind",
        )
    return render


def _run(doc: Document, comparison: Comparison | None) -> str:
    return run_page(run_from_document(doc), comparison)


def _soak(doc: Document, comparison: Comparison | None) -> str:
    refuse_comparison(comparison, "soak")
    return soak_page(soak_from_document(doc))


def _crash(doc: Document, comparison: Comparison | None) -> str:
    refuse_comparison(comparison, "crash-test")
    return crash_page(crash_from_document(doc))


# Result kind -> the function turning a loaded document (and a comparison, for runs) into
# a page.
PAGE_RENDERERS: dict[str, Callable[[Document, Comparison | None], str]] = {
    "run": _run,
    "soak": _soak,
    "crash-test": _crash,
}


def refuse_comparison(comparison: object | None, kind: str) -> None:
    if comparison is not None:
        raise BadInputError(
            f"--baseline applies to run results, not to a {kind} result", field="--baseline"
        )


def render_document(
    doc: Document, comparison: Comparison | None = None, *, view_url: str | None = None
) -> str:
    """Render `doc` with the page registered for its kind; a run's page links to `evalctl
    view` at `view_url` (`[history] view_url`) when given."""
    if view_url is not None and document_kind(doc) == "run":
        return run_page(run_from_document(doc), comparison, view_url=view_url)
    return renderer_for(doc, PAGE_RENDERERS, "HTML")(doc, comparison)
