"""No module of evalctl imports itself back through others, type-only imports included: the
contracts in pyproject.toml order the layers, and this keeps every layer free of cycles too
(issue 32 found six provider modules and the registry importing one another)."""

from __future__ import annotations

import grimp


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_cycle_finder_finds_a_cycle_and_only_one() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_evalctl_has_no_import_cycle() -> None:
    graph = grimp.build_graph("evalctl")
    # Generated gRPC code is protoc's, not ours.
    modules = {m for m in graph.modules if not m.startswith("evalctl.server.gen")}
    edges = {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}
    cycles = _cycles(edges)
    assert not cycles, "modules that import each other: " + "; ".join(
        " <-> ".join(group) for group in cycles
    )
