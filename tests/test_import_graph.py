"""No import circle among the project's modules (mtabench/, ingest/, expectations/, dags/, bench/,
scripts/): every `import` and `from ... import` read from the source with ast, those inside
functions included, since a deferred import only hides a circle from the interpreter."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("mtabench", "ingest", "expectations", "dags", "bench", "scripts")


def modules(repo: Path, roots: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            parts = path.relative_to(repo).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _known(name: str, mods: dict[str, Path]) -> str | None:
    """The project module an imported name lands in (a name inside a module: that module)."""
    while name not in mods:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def import_graph(repo: Path, roots: tuple[str, ...] = ROOTS) -> dict[str, set[str]]:
    mods = modules(repo, roots)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                # `from pkg import mod` imports pkg.mod; `from mod import name` imports mod
                targets = [f"{base}.{a.name}" if base else a.name for a in node.names]
            else:
                continue
            for target in targets:
                dep = _known(target, mods)
                if dep is not None and dep != name:
                    deps.add(dep)
        graph[name] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    graph = import_graph(REPO)
    assert len(graph) > 50 and graph["mtabench.cli.main"]  # the walk sees the project
    assert circles(graph) == []


def test_a_circle_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")  # deferred, relative
    (pkg / "c.py").write_text("import pkg.a as a\ng = 1\n")
    (pkg / "d.py").write_text("from pkg import a\n")  # imports into the circle, not part of it
    assert circles(import_graph(tmp_path, ("pkg",))) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
