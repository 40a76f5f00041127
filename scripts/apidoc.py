"""docs/api.md, generated from the public names' source: signatures and docstrings.

Signatures, fields and defaults are taken from the source text (``ast``), as written, so the
page is the same on every machine and Python version and shows annotations the way the code
spells them. Google-style sections (Args, Returns, Raises, Attributes…) become lists.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

PACKAGES: tuple[tuple[str, str], ...] = (
    ("agentfsm", "The names an application imports: `from agentfsm import Agent, tool`."),
    ("agentfsm.stores", "Run stores; see [persistence](persistence.md)."),
    ("agentfsm.diagrams", "Diagrams of the machines; see [diagrams](diagrams.md)."),
    ("agentfsm.verify", "The verifier and the log check; see [verification](verification.md)."),
    ("agentfsm.testing", "Helpers for testing agents; see [testing](testing.md)."),
)
"""The modules documented, each with the line that introduces it."""

TOPICS: tuple[tuple[str, str], ...] = (
    ("agentfsm.fsm", "The Agent and the machines"),
    ("agentfsm.tools", "Tools"),
    ("agentfsm.llm", "Models"),
    ("agentfsm.states", "Vocabulary and data"),
    ("agentfsm.stores", "Stores"),
    ("agentfsm.diagrams", "Diagrams"),
    ("agentfsm.verify", "Verification"),
    ("agentfsm.errors", "Errors"),
)
"""How the names of ``agentfsm`` are grouped: by the subpackage that defines them."""

SECTIONS = {"Args", "Arguments", "Returns", "Yields", "Raises", "Attributes", "Example", "Note"}
_SECTION = re.compile(r"^(\w+):$")
_ITEM = re.compile(r"^(\*{0,2}[\w.]+(?: \([^)]*\))?):\s*(.*)$")
_SKIPPED_FIELDS = {"model_config"}
_VALUE_WIDTH = 120
# Signatures are not runnable code, so their blocks are ```py, which is highlighted like
# Python but not executed by tests/test_docs_examples.py (it runs the ```python blocks).

Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | ast.Assign | ast.AnnAssign


@dataclass(frozen=True)
class Found:
    """Where a public name is defined: its module and its node, with its docstring."""

    module: str
    node: Definition
    doc: str | None


@functools.cache
def _tree(module: str) -> ast.Module:
    loaded = importlib.import_module(module)
    path = Path(str(loaded.__file__))
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return node.targets[0].id
    return None


def _string(node: ast.stmt | None) -> str | None:
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ):
        return inspect.cleandoc(node.value.value)
    return None


def _is_overload(node: ast.stmt) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(ast.unparse(d).endswith("overload") for d in decorators)


def _imported_module(module: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``from … import`` reads, inside ``module``."""
    if not node.level:
        return node.module or ""
    is_package = hasattr(importlib.import_module(module), "__path__")
    package = module if is_package else module.rpartition(".")[0]
    return importlib.util.resolve_name("." * node.level + (node.module or ""), package)


def find(module: str, name: str, hops: int = 6) -> Found:
    """The definition of ``name`` as ``module`` exports it, following re-exports."""
    tree = _tree(module)
    body = tree.body
    found: Found | None = None
    for index, node in enumerate(body):
        if _defined_name(node) != name or _is_overload(node):
            continue
        assert isinstance(node, Definition)
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
        else:
            doc = _string(body[index + 1] if index + 1 < len(body) else None)
        found = Found(module, node, doc)
    if found is not None:
        return found
    for imported in ast.walk(tree):
        if isinstance(imported, ast.ImportFrom) and any(a.name == name for a in imported.names):
            source = _imported_module(module, imported)
            if hops and source.startswith("agentfsm"):
                return find(source, name, hops - 1)
    raise LookupError(f"cannot find where {module}.{name} is defined")


_PROSE_SECTIONS = {"Returns", "Yields", "Example", "Note"}


def _section_line(out: list[str], section: str, raw: str) -> None:
    """Add one line of a docstring section: a new list item, or a continuation."""
    text = raw.strip()
    is_item_line = raw.startswith("    ") and not raw.startswith("     ")
    item = _ITEM.match(text) if is_item_line and section not in _PROSE_SECTIONS else None
    if item:
        out.append(f"- `{item.group(1)}`: {item.group(2)}".rstrip())
    elif out and out[-1]:
        out[-1] += " " + text
    else:
        out.append(text)


def _tidy(lines: list[str]) -> list[str]:
    """No blank line twice in a row, none at the start or the end; then one blank line."""
    tidy: list[str] = []
    for line in lines:
        if line or (tidy and tidy[-1]):
            tidy.append(line)
    while tidy and not tidy[-1]:
        tidy.pop()
    return [*tidy, ""]


def _markdown_doc(doc: str | None) -> list[str]:
    """A Google-style docstring as Markdown: sections become bold labels with lists."""
    if not doc:
        return ["*(no docstring)*", ""]
    out: list[str] = []
    section: str | None = None
    for raw in doc.splitlines():
        line = raw.rstrip()
        header = _SECTION.match(line)
        if header and header.group(1) in SECTIONS:
            section = header.group(1)
            out += ["", f"**{section}:**", ""]
        elif section is not None and line.startswith(" "):
            _section_line(out, section, line)
        elif section is not None and not line:
            continue
        else:
            section = None
            out.append(line[:-1] if line.endswith("::") else line)
    return _tidy(out)


def _summary(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(doc.split("\n\n")[0].split())


def _argument(arg: ast.arg, default: ast.expr | None, star: str = "") -> str:
    text = star + arg.arg
    if arg.annotation is not None:
        text += f": {ast.unparse(arg.annotation)}"
        return text + (f" = {ast.unparse(default)}" if default is not None else "")
    return text + (f"={ast.unparse(default)}" if default is not None else "")


def _arguments(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> str:
    """The parameter list as PEP 8 writes it, without ``self`` / ``cls`` for a method."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    parts = [_argument(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        parts.append(_argument(args.vararg, None, "*"))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [_argument(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        parts.append(_argument(args.kwarg, None, "**"))
    if method and positional:
        parts.pop(0)
        if parts and parts[0] == "/":
            parts.pop(0)
    return ", ".join(parts)


def _call(prefix: str, arguments: str, suffix: str = "") -> str:
    """``prefix(arguments)suffix``, one parameter per line when it is too long for a line."""
    line = f"{prefix}({arguments}){suffix}"
    if len(line) <= 99 or not arguments:
        return line
    parts = _split_top_level(arguments)
    inner = "".join(f"    {part},\n" for part in parts)
    return f"{prefix}(\n{inner}){suffix}"


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def _returns(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {ast.unparse(d) for d in node.decorator_list}


def _member_lines(node: ast.ClassDef) -> list[str]:
    fields: list[str] = []
    methods: dict[str, str] = {}
    body = node.body
    for index, item in enumerate(body):
        name = _defined_name(item)
        if name is None or name.startswith("_") or name in _SKIPPED_FIELDS:
            continue
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            if _is_overload(item):
                continue
            summary = _summary(ast.get_docstring(item))
            kind = "async " if isinstance(item, ast.AsyncFunctionDef) else ""
            if "property" in _decorators(item):
                kind_of = f": {ast.unparse(item.returns)}" if item.returns is not None else ""
                methods[name] = f"- `{name}{kind_of}` (property) — {summary}".rstrip(" —")
            else:
                signature = f"{kind}{name}({_arguments(item, method=True)}){_returns(item)}"
                methods[name] = f"- `{signature}` — {summary}".rstrip(" —")
            continue
        assert isinstance(item, ast.Assign | ast.AnnAssign)
        doc = _summary(_string(body[index + 1] if index + 1 < len(body) else None))
        fields.append(f"- `{_assignment(item)}` — {doc}".rstrip(" —"))
    lines = []
    if fields:
        is_enum = any(ast.unparse(b).endswith("Enum") for b in node.bases)
        lines += ["**Members:**" if is_enum else "**Fields:**", "", *fields, ""]
    if methods:
        lines += ["**Methods:**", "", *methods.values(), ""]
    return lines


def _assignment(node: ast.Assign | ast.AnnAssign) -> str:
    name = _defined_name(node)
    value = "" if node.value is None else ast.unparse(node.value)
    if len(value) > _VALUE_WIDTH or "\n" in value:
        value = "…"
    if isinstance(node, ast.AnnAssign):
        annotation = ast.unparse(node.annotation)
        return f"{name}: {annotation}" + (f" = {value}" if value else "")
    return f"{name} = {value}"


def _class(name: str, node: ast.ClassDef, doc: str | None) -> list[str]:
    bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
    header = f"class {name}" + (f"({bases})" if bases else "")
    init = next(
        (
            item
            for item in node.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        ),
        None,
    )
    lines = ["```py", header]
    if init is not None:
        lines.append(_call(name, _arguments(init, method=True)))
    return [*lines, "```", "", *_markdown_doc(doc), *_member_lines(node)]


def entry(name: str, found: Found) -> list[str]:
    """The Markdown section of one public name."""
    node = found.node
    lines = [f"### `{name}`", "", f"<sub>defined in `{found.module}`</sub>", ""]
    if isinstance(node, ast.ClassDef):
        return lines + _class(name, node, found.doc)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        kind = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        signature = _call(f"{kind} {name}", _arguments(node, method=False), _returns(node))
        return [*lines, "```py", signature, "```", "", *_markdown_doc(found.doc)]
    return [*lines, "```py", _assignment(node), "```", "", *_markdown_doc(found.doc)]


def _topic(module: str) -> str:
    for prefix, title in TOPICS:
        if module == prefix or module.startswith(prefix + "."):
            return title
    return "Other"


class _Anchors:
    """GitHub's heading anchors: lower case, punctuation dropped, repeats numbered."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def add(self, heading: str) -> str:
        base = re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")
        count = self.used.get(base, 0)
        self.used[base] = count + 1
        return base if count == 0 else f"{base}-{count}"


def _exports(package: str) -> list[str]:
    loaded: ModuleType = importlib.import_module(package)
    names: list[str] = list(getattr(loaded, "__all__", []))
    return names


HEADER = [
    "# API reference",
    "",
    "<!-- generated by scripts/gen_docs.py from the docstrings: edit those, then run "
    "`make docs` -->",
    "",
    "Every name an application imports, with its signature and docstring. The names of "
    "`agentfsm` are grouped by topic; each subpackage below it lists the names it adds.",
    "",
]


def _package(
    package: str,
    intro: str,
    anchors: _Anchors,
    documented: dict[tuple[str, str], str],
    contents: list[str],
) -> list[str]:
    """The section of one package; adds its line(s) to ``contents``."""
    names = _exports(package)
    lines = [f"## `{package}`", "", intro, ""]
    package_anchor = anchors.add(package)
    found = {n: find(package, n) for n in names}
    seen = [n for n in names if (found[n].module, n) in documented]
    if seen:
        links = ", ".join(f"[`{n}`](#{documented[(found[n].module, n)]})" for n in seen)
        lines += [f"Also exported here: {links}.", ""]
    fresh = [n for n in names if (found[n].module, n) not in documented]
    top = package == "agentfsm"
    for title in [title for _, title in TOPICS] + ["Other"]:
        chosen = [n for n in fresh if _topic(found[n].module) == title]
        if not chosen:
            continue
        if top:
            lines += [f"### {title}", ""]
            title_anchor = anchors.add(title)
        for name in chosen:
            section = entry(name, found[name])
            if top:
                section[0] = "#" + section[0]
            documented[(found[name].module, name)] = anchors.add(name)
            lines += section
        links = ", ".join(f"[`{n}`](#{documented[(found[n].module, n)]})" for n in chosen)
        if top:
            contents.append(f"- [{title}](#{title_anchor}): {links}")
        else:
            contents.append(f"- [`{package}`](#{package_anchor}): {links}")
    return lines


@functools.cache
def generate() -> str:
    """The whole of docs/api.md (computed once per process: the code does not change)."""
    anchors = _Anchors()
    anchors.add("API reference")
    documented: dict[tuple[str, str], str] = {}
    contents: list[str] = []
    body: list[str] = []
    for package, intro in PACKAGES:
        body += _package(package, intro, anchors, documented, contents)
    lines = [*HEADER, *contents, "", *body]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate())
