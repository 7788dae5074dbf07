"""`evalctl embed TEXT...`: a quick look at a provider's embeddings.

Prints the model, the vector's size, its first components and its norm for each text and,
for several texts, their pairwise cosine similarity; `--json` carries every component.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.embeddings import Embedder, cosine
from evalctl.errors import BadInputError
from evalctl.providers.base import CAP_EMBEDDINGS, Provider
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import create, detect
from evalctl.userfiles import MAX_TIMEOUT_S

# Components shown per text without --json: enough to see two vectors differ.
SHOWN_COMPONENTS = 6
DEFAULT_TIMEOUT_S = 120.0


class EmbeddedText(BaseModel):
    text: str
    dimensions: int
    # Euclidean length: 1.0 where the provider normalises (the local engine, OpenAI).
    norm: float
    vector: list[float]


class EmbedReport(BaseModel):
    provider: str
    model: str
    # The model file's SHA256 where the provider knows it (the local engine).
    model_sha256: str | None
    dimensions: int
    input_tokens: int | None
    seconds: float
    texts: list[EmbeddedText]
    # cosine[i][j] between texts i and j; empty for a single text.
    cosine: list[list[float]]


def _render(report: EmbedReport) -> None:
    stdout.print(
        f"[bold]{escape(report.model)}[/] via {escape(report.provider)}: "
        f"{report.dimensions} dimensions, {report.seconds:.2f}s"
        + (f", {report.input_tokens} tokens" if report.input_tokens is not None else "")
    )
    if report.model_sha256:
        stdout.print(f"[dim]sha256 {report.model_sha256}[/]")
    for index, item in enumerate(report.texts, start=1):
        head = ", ".join(f"{x:+.4f}" for x in item.vector[:SHOWN_COMPONENTS])
        more = ", ..." if item.dimensions > SHOWN_COMPONENTS else ""
        stdout.print(f"{index}. {escape(item.text)}", soft_wrap=True)
        stdout.print(f"   [{head}{more}]  norm {item.norm:.4f}")
    if report.cosine:
        table = Table(title="cosine similarity")
        table.add_column("")
        for index in range(1, len(report.texts) + 1):
            table.add_column(str(index), justify="right")
        for index, row in enumerate(report.cosine, start=1):
            table.add_row(str(index), *(f"{value:.3f}" for value in row))
        stdout.print(table)


def _embedder(name: str | None, opts: ProviderOptions) -> tuple[str, Provider]:
    """The provider chosen, one that embeds (an `Embedder` too), else bad input."""
    chosen = name or detect(opts)
    provider = create(chosen, opts)
    if CAP_EMBEDDINGS not in provider.capabilities or not isinstance(provider, Embedder):
        provider.close()
        raise BadInputError(
            f"provider {chosen!r} has no embeddings",
            field="--provider",
            hint="local, openai, gemini and scripted embed; `evalctl providers` lists them",
        )
    return chosen, provider


def embed(
    texts: Annotated[list[str], typer.Argument(help="Text(s) to embed.", show_default=False)],
    provider: Annotated[str | None, options.PROVIDER] = None,
    model: Annotated[str | None, options.MODEL] = None,
    script: Annotated[Path | None, options.SCRIPT] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", min=0.1, max=MAX_TIMEOUT_S, help="Seconds the embedding may take."
        ),
    ] = DEFAULT_TIMEOUT_S,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Embed texts with a provider and show the vectors (several: their cosines).

    The local engine embeds with the served model (or `local_embedding_model`): SmolLM2-135M
    by default, a small chat model whose embeddings are weak; docs/hardware.md, "Embeddings".
    """
    for index, text in enumerate(texts, start=1):
        if not text.strip():
            raise BadInputError(f"text {index} is empty: there is nothing to embed", field="TEXT")
    opts = ProviderOptions(
        settings=options.settings_from_env(), env=options.environ(), model=model, script=script
    )
    name, made = _embedder(provider, opts)
    started = time.monotonic()
    try:
        assert isinstance(made, Embedder)  # _embedder checked it; narrows the type for mypy
        result = made.embed(texts, timeout=timeout)
    finally:
        made.close()
    seconds = time.monotonic() - started
    vectors = result.vectors
    report = EmbedReport(
        provider=name,
        model=result.model,
        model_sha256=result.model_sha256,
        dimensions=len(vectors[0]) if vectors else 0,
        input_tokens=result.input_tokens,
        seconds=round(seconds, 3),
        texts=[
            EmbeddedText(
                text=text,
                dimensions=len(vector),
                norm=math.sqrt(sum(x * x for x in vector)),
                vector=vector,
            )
            for text, vector in zip(texts, vectors, strict=True)
        ],
        cosine=[[cosine(a, b) for b in vectors] for a in vectors] if len(vectors) > 1 else [],
    )
    emit(report, as_json, _render)


def register(app: typer.Typer) -> None:
    app.command("embed")(embed)
