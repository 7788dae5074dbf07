"""The spy records `normalized_arguments`: what the spied function's signature bound, its
defaults applied, as JSON data, beside the arguments as passed."""

from __future__ import annotations

from pathlib import Path

from tests.target_helpers import run_suite, unique, write


def test_normalized_arguments_hold_the_defaults_the_call_left_out(tmp_path: Path) -> None:
    tools, app = unique("normtools"), unique("normapp")
    write(
        tmp_path / f"{tools}.py",
        """
        def search(color, max_price=None, *, limit=5, tags=("dry",), **extra):
            return [color]

        class Shop:
            def price(self, name, currency="EUR"):
                return 10
        """,
    )
    write(
        tmp_path / f"{app}.py",
        f"""
        import {tools} as tools

        def answer(doc):
            tools.search("red", mood={{1, 2}})
            tools.Shop().price("Rioja")
            return "ok"
        """,
    )
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "norm"
        kind = "assert"
        target = {{ type = "python", function = "{app}:answer" }}

        [[suite.spy]]
        function = "{tools}:search"

        [[suite.spy]]
        function = "{tools}:Shop.price"

        [[case]]
        id = "one"
        input = {{ prompt = "hi" }}
        [[case.assert]]
        type = "tool-called"
        name = "search"
        args = {{ color = "red" }}
        """,
    )
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.status == "pass", case
    search, price = case.tool_calls
    assert search.arguments == {"color": "red", "mood": [1, 2]}
    assert search.normalized_arguments == {
        "color": "red",
        "max_price": None,
        "limit": 5,
        "tags": ["dry"],
        "mood": [1, 2],
    }
    assert price.arguments == {"name": "Rioja"}
    assert price.normalized_arguments == {"name": "Rioja", "currency": "EUR"}
