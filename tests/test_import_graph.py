"""Imports point one way: the graph of specviz's modules, and the graph of its rooms (packages, and
the engine's rooms by role), have no circles. Every import counts, those inside functions too, so a
circle cannot be dodged by importing late. Read from the source with `ast`; nothing is imported."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "specviz"
ENGINE_ROOMS = ("metrics", "loop", "analysis")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The specviz modules `name` imports anywhere in its file (`from X import y` counts X.y when
    that is a module, else X)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("specviz"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("specviz"):
                continue
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {m for m in found if m in known and m != name}


def module_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def room_of(module: str) -> str:
    """specviz.engine.loop.race -> specviz.engine.loop; specviz.app.state -> specviz.app;
    specviz.errors -> specviz.errors (a top-level module is its own room)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "engine" and parts[2] in ENGINE_ROOMS:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def room_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = {}
    for name, targets in modules.items():
        rooms.setdefault(room_of(name), set()).update(room_of(t) for t in targets if room_of(t) != room_of(name))
    return rooms


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph as a path [a, b, ..., a], or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_module_graph_has_no_circle():
    assert find_cycle(module_graph()) is None, f"modules import each other in a circle: {find_cycle(module_graph())}"


def test_the_room_graph_has_no_circle():
    rooms = room_graph(module_graph())
    assert find_cycle(rooms) is None, f"rooms import each other in a circle: {find_cycle(rooms)}"


def test_the_engine_rooms_point_down():
    # analysis -> loop -> metrics, all over specviz.runtime (below the engine); runtime and metrics
    # import no room of the engine, and neither the engine nor runtime imports the models, the app,
    # the view, the CLI, the bench or training.
    rooms = room_graph(module_graph())
    allowed = {
        "specviz.runtime": set(),
        "specviz.engine.metrics": set(),
        "specviz.engine.loop": {"specviz.runtime", "specviz.engine.metrics"},
        "specviz.engine.analysis": {"specviz.engine.loop", "specviz.runtime", "specviz.engine.metrics"},
    }
    for room, may in allowed.items():
        engine_side = {r for r in rooms.get(room, ()) if r.startswith(("specviz.engine", "specviz.runtime"))}
        assert engine_side <= may, f"{room} imports {sorted(engine_side - may)}"
        above = {r for r in rooms.get(room, ()) if r.split(".")[1] in ("models", "app", "view", "cli", "bench", "training")}
        assert not above, f"{room} imports {sorted(above)}"


def test_models_import_the_engine_and_never_the_reverse():
    rooms = room_graph(module_graph())
    engine = [r for r in rooms if r.startswith(("specviz.engine", "specviz.runtime"))]
    assert all("specviz.models" not in rooms[r] for r in engine)
    assert any(r.startswith("specviz.engine") for r in rooms["specviz.models"])


def test_the_check_sees_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    # and a late import counts: a function-level import is read like a top-level one
    tree = PACKAGE / "engine" / "loop" / "config.py"
    assert "specviz.engine.loop.rules" in imports_of("specviz.engine.loop.config", tree, set(all_modules()))


def outside_imports(path: Path) -> set[str]:
    """The top-level names of what a file imports from outside specviz (`import torch.nn` -> torch),
    anywhere in the file, a function's late import too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {"specviz"}


def test_no_view_module_imports_torch():
    # The view folds events into HTML and figures: it times no model and reads no tensor. What needs
    # torch (a device out of memory, the threads torch decodes with, a pair's dtype) is the app's.
    importing = sorted(str(p.relative_to(ROOT)) for p in (PACKAGE / "view").rglob("*.py")
                       if "torch" in outside_imports(p))
    assert not importing, f"view modules import torch: {importing}"


def test_the_torch_check_sees_an_import():
    assert "torch" in outside_imports(PACKAGE / "app" / "decoders.py")        # at the top of the file
    # and inside a function (needs_network imports huggingface_hub late)
    assert "huggingface_hub" in outside_imports(PACKAGE / "app" / "pairs.py")
    assert "specviz" not in outside_imports(PACKAGE / "app" / "pairs.py")
