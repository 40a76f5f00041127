"""The package's layers run one way: a module imports only from its own layer or lower ones.

The layers, bottom to top, are `LAYERS` below (the order the design notes give in words).
Every top-level module and subpackage of ``agentfsm`` must be placed in one of them, so a new
one cannot slip in unplaced.

Which imports count: all of them. Module-level imports, imports inside functions and methods
(a lazy import is still a dependency; it only runs later), and imports under
``if TYPE_CHECKING:`` (the types of a lower layer must not name a higher one either). Relative
imports are resolved against the importing module. ``import agentfsm`` or ``from agentfsm
import ...`` from inside the package counts as an import of the facade, which only ``cli``
may use (nothing in the package does today).

Within a layer, and within one subpackage, imports may go either way, but the modules must
not import each other in a circle: one of them should own what both need. For circles, only
the imports that run count (module-level and function-level): an import under
``if TYPE_CHECKING:`` never runs, so a module may name, for its type hints, a class of a
module of its own layer that imports it (``agent/record.py`` types its helpers with the
``Agent`` of ``agent/core.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "agentfsm"

LAYERS: tuple[tuple[str, ...], ...] = (
    # the vocabulary as data, and the argument checks, redaction and terminal escaping every
    # layer uses; no agentfsm imports above it
    ("_checks", "_compat", "_redact", "_terminal", "errors", "states"),
    ("diagrams", "llm", "tools"),
    ("fsm",),
    ("stores",),
    ("agent",),
    ("temporal", "verify"),
    ("serve", "testing"),
    ("__init__",),  # the facade: re-exports the curated names of the layers below
    ("_demo", "_runs_cli", "_sim_cli", "cli"),  # the command line and its demo, over everything
)
"""Each layer's parts, bottom to top: top-level modules and subpackages of ``agentfsm``.

``temporal`` and ``serve`` are not written yet; they are placed where architecture.md puts
them so that they arrive in the right layer.
"""

KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()
"""Circles of modules tolerated for now, each with its reason (none today)."""
"""Pairs of modules known to import each other, each with the reason and who removes it."""


@dataclass(frozen=True)
class Import:
    """One import statement of one module of the package."""

    module: str
    """The importing module, dotted (``agentfsm.fsm.guards``)."""
    target: str
    """The imported module, dotted and absolute."""
    line: int
    """Where the import is, in the importing module's file."""
    typing_only: bool = False
    """Whether it is under ``if TYPE_CHECKING:`` (never run: no circle at import time)."""


def module_name(path: Path, root: Path) -> str:
    """The dotted module name of a file under ``root`` (the package's directory)."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_module(dotted: str, root: Path) -> bool:
    path = root.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _typing_only_lines(tree: ast.AST) -> set[int]:
    """The lines of the statements under ``if TYPE_CHECKING:`` (not its ``else``)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
        if isinstance(node, ast.If) and name == "TYPE_CHECKING":
            lines |= {
                n.lineno for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")
            }
    return lines


def imports_of(path: Path, root: Path) -> Iterator[Import]:
    """Every import of ``root``'s package in one file, at any depth of its syntax tree."""
    module = module_name(path, root)
    top = root.name
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = _typing_only_lines(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path.name == "__init__.py")
            # ``from agentfsm.verify import report`` imports the module ``report``; ``from
            # agentfsm.verify import Counterexample`` a name of the package ``verify``.
            targets = [
                f"{base}.{a.name}" if _is_module(f"{base}.{a.name}", root) else base
                for a in node.names
            ]
        else:
            continue
        for target in targets:
            if target == top or target.startswith(f"{top}."):
                yield Import(module, target, node.lineno, node.lineno in typing_only)


def part_of(module: str) -> str:
    """The top-level part a dotted module belongs to (``__init__`` for the facade)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(part: str) -> int:
    """The index of the layer that holds ``part``; a `KeyError` if it is in none."""
    for index, layer in enumerate(LAYERS):
        if part in layer:
            return index
    raise KeyError(part)


def all_imports(root: Path) -> list[Import]:
    """Every import of the package by its own modules."""
    return [item for path in sorted(root.rglob("*.py")) for item in imports_of(path, root)]


def upward_imports(root: Path) -> list[str]:
    """Each import of a higher layer by a lower one, as ``module:line imports target``."""
    found = []
    for item in all_imports(root):
        source, target = part_of(item.module), part_of(item.target)
        if layer_of(target) > layer_of(source):
            found.append(
                f"{item.module}:{item.line} imports {item.target} "
                f"(layer {source!r} is below {target!r})"
            )
    return found


def circles(root: Path) -> set[frozenset[str]]:
    """Pairs of modules that reach each other through imports (each circle, as its pairs)."""
    graph: dict[str, set[str]] = {}
    modules = {module_name(path, root) for path in root.rglob("*.py")}
    for item in all_imports(root):
        if item.typing_only:
            continue
        if item.target in modules and item.target != item.module:
            graph.setdefault(item.module, set()).add(item.target)

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {module: reach(module) for module in graph}
    return {
        frozenset({a, b})
        for a, targets in graph.items()
        for b in targets
        if a in reachable.get(b, set())
    }


def parts(root: Path) -> set[str]:
    """The top-level modules and subpackages of the package (the facade as ``__init__``)."""
    found = {p.stem for p in root.glob("*.py")}
    found |= {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    return found


def test_every_part_of_the_package_is_in_a_layer() -> None:
    placed = {part for layer in LAYERS for part in layer}

    assert parts(PACKAGE) - placed == set()


def test_no_layer_imports_a_higher_one() -> None:
    assert upward_imports(PACKAGE) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert circles(PACKAGE) - KNOWN_CIRCLES == set()


def test_every_known_circle_is_still_there() -> None:
    # An entry that no longer matches is removed, so the list stays honest.
    assert circles(PACKAGE) >= KNOWN_CIRCLES


# The checks themselves, on a small package written for each case.


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "agentfsm"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for directory in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()
    return root


@pytest.mark.parametrize(
    "code",
    [
        "from agentfsm.agent.core import Agent\n",
        "import agentfsm.agent.core\n",
        "from ..agent import core\n",
        "from agentfsm import agent\n",
        "def later():\n    from agentfsm.agent import core\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agentfsm.agent import X\n",
    ],
    ids=["from", "import", "relative", "subpackage", "in-function", "type-checking"],
)
def test_an_upward_import_is_found_however_it_is_written(tmp_path: Path, code: str) -> None:
    root = _package(tmp_path, {"fsm/engine.py": code, "agent/core.py": ""})

    found = upward_imports(root)

    assert len(found) == 1
    assert found[0].startswith("agentfsm.fsm.engine:")
    assert "(layer 'fsm' is below 'agent')" in found[0]


def test_an_import_of_the_facade_from_below_is_upward(tmp_path: Path) -> None:
    root = _package(tmp_path, {"stores/base.py": "from agentfsm import Agent\n"})

    assert upward_imports(root) == [
        "agentfsm.stores.base:1 imports agentfsm (layer 'stores' is below '__init__')"
    ]


def test_downward_and_same_layer_imports_are_allowed(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "agent/core.py": "from agentfsm.stores import base\nfrom . import turns\n",
            "agent/turns.py": "from agentfsm.errors import X\n",
            "tools/system.py": "from agentfsm.llm import Model\n",
            "stores/base.py": "",
        },
    )

    assert upward_imports(root) == []


def test_a_part_in_no_layer_is_refused(tmp_path: Path) -> None:
    root = _package(tmp_path, {"plugins/x.py": "", "fsm/y.py": "from agentfsm.plugins import x\n"})

    assert "plugins" in parts(root) - {p for layer in LAYERS for p in layer}
    with pytest.raises(KeyError, match="plugins"):
        upward_imports(root)


def test_a_circle_of_modules_is_found(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "verify/a.py": "from agentfsm.verify.b import X\n",
            "verify/b.py": "def f():\n    from agentfsm.verify.c import Y\n",
            "verify/c.py": "from agentfsm.verify import a\n",
            "verify/d.py": "from agentfsm.verify.a import Z\n",
        },
    )

    found = circles(root)

    names = {"agentfsm.verify.a", "agentfsm.verify.b", "agentfsm.verify.c"}
    assert found
    assert set().union(*found) == names


def test_a_circle_through_a_type_checking_import_is_not_a_circle(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "agent/core.py": "from agentfsm.agent.record import Record\n",
            "agent/record.py": (
                "import typing\nif typing.TYPE_CHECKING:\n    from agentfsm.agent.core import A\n"
                "else:\n    pass\n"
            ),
        },
    )

    assert circles(root) == set()
    assert [i.typing_only for i in all_imports(root)] == [False, True]


def test_a_type_checking_import_still_counts_for_the_layers(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {"fsm/a.py": "import typing\nif typing.TYPE_CHECKING:\n    import agentfsm.agent\n"},
    )

    assert len(upward_imports(root)) == 1
