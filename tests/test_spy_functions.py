"""The function spy on its own: what it wraps (functions, methods, static and class methods,
async functions), that it records only inside a case's log and into the right one, and that
every original is back once the last case using it ends."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from pathlib import Path

from evalctl.calllog import collecting
from evalctl.cases.schema import SpyDecl
from evalctl.tools.spy_functions import jsonable, spying
from tests.target_helpers import unique, write


def _module(tmp_path: Path) -> str:
    name = unique("spied")
    write(
        tmp_path / f"{name}.py",
        """
        import dataclasses

        @dataclasses.dataclass
        class Row:
            id: int

        def plain(a, b=2, *rest, **extra):
            return (a, b)

        async def slow(x):
            return [Row(x)]

        class Store:
            def get(self, key):
                if key == "bad":
                    raise ValueError("no such key")
                return {"key": key}

            @staticmethod
            def pure(n):
                return n + 1

            @classmethod
            def make(cls, label):
                return label.upper()

        class Child(Store):
            pass
        """,
    )
    return name


def test_functions_and_methods_of_every_kind_are_recorded(tmp_path: Path) -> None:
    mod = _module(tmp_path)
    spies = [SpyDecl(function=f"{mod}:{f}") for f in ("plain", "slow", "Store.get")]
    spies += [SpyDecl(function=f"{mod}:Store.pure"), SpyDecl(function=f"{mod}:Child.make")]
    with collecting() as log, spying(spies, tmp_path):
        m = sys.modules[mod]
        m.plain(1, 5, 6, flag=True)
        asyncio.run(m.slow(3))
        store = m.Store()
        store.get("k")
        with contextlib.suppress(ValueError):
            store.get("bad")
        assert m.Store.pure(1) == 2
        assert m.Child.make("x") == "X"
    calls = [(c.name, c.arguments, c.value, c.is_error) for c in log.calls()]
    assert calls == [
        ("plain", {"a": 1, "b": 5, "rest": [6], "flag": True}, [1, 5], False),
        ("slow", {"x": 3}, [{"id": 3}], False),
        ("get", {"key": "k"}, {"key": "k"}, False),
        ("get", {"key": "bad"}, None, True),
        ("pure", {"n": 1}, 2, False),
        ("make", {"label": "x"}, "X", False),
    ]
    assert log.calls()[3].result == "error: ValueError: no such key"
    # Back as they were: the inherited class method is inherited again.
    m = sys.modules[mod]
    assert "make" not in m.Child.__dict__
    assert not hasattr(m.plain, "__wrapped__") and not hasattr(m.Store.get, "__wrapped__")
    assert isinstance(m.Store.__dict__["pure"], staticmethod)


def test_no_record_outside_a_case_and_each_case_its_own(tmp_path: Path) -> None:
    mod = _module(tmp_path)
    spy = [SpyDecl(function=f"{mod}:plain", name="p")]
    with spying(spy, tmp_path):
        sys.modules[mod].plain(0)  # no case is collecting: nothing to record into
        logs = {}
        started = threading.Barrier(2)

        def case(tag: int) -> None:
            with collecting() as log, spying(spy, tmp_path):
                started.wait()
                sys.modules[mod].plain(tag)
                started.wait()
            logs[tag] = [c.arguments["a"] for c in log.calls()]

        threads = [threading.Thread(target=case, args=(t,)) for t in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert logs == {1: [1], 2: [2]}
        assert hasattr(sys.modules[mod].plain, "__wrapped__")  # the outer user still holds it
    assert not hasattr(sys.modules[mod].plain, "__wrapped__")


def test_jsonable_keeps_any_return_value_recordable() -> None:
    assert jsonable((1, {2, 3}, b"x")) == [1, [2, 3], "x"]
    assert jsonable(object()).startswith("<object object")
