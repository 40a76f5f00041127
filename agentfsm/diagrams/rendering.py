"""Rendering DOT with Graphviz's ``dot``, and writing a diagram in the format a file names."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import graphviz

from agentfsm import _checks
from agentfsm.diagrams.dot import StateSource, View, check_view, diagram
from agentfsm.diagrams.text import markdown, mermaid
from agentfsm.errors import DiagramRenderError
from agentfsm.states.events import Event

ImageFormat = Literal["svg", "png"]
"""The formats `render` asks ``dot`` for."""

FORMATS = (".dot", ".mmd", ".md", ".svg", ".png")
"""The file suffixes `save_diagram` writes: DOT, Mermaid, Markdown, SVG and PNG."""

INSTALL_HINT = (
    "Graphviz's 'dot' program was not found on PATH; install Graphviz "
    "(apt-get install graphviz, brew install graphviz, or https://graphviz.org/download/), "
    "or write .dot, .mmd or .md, which need no renderer"
)
"""What `DiagramRenderError` says when ``dot`` is missing."""


def render(source: str, format: ImageFormat, path: str = "<memory>") -> bytes:
    """Render DOT ``source`` to SVG or PNG bytes with Graphviz's ``dot``.

    Args:
        source: DOT text, e.g. from `combined_diagram`.
        format: ``svg`` or ``png``.
        path: The file the bytes are for, named in an error.

    Returns:
        The rendered image.

    Raises:
        DiagramRenderError: ``dot`` is not installed (the message says how to install
            Graphviz), or it failed on the source.
    """
    if shutil.which("dot") is None:
        raise DiagramRenderError(path, format, INSTALL_HINT)
    try:
        image: bytes = graphviz.Source(source).pipe(format=format)
    except graphviz.ExecutableNotFound as error:
        raise DiagramRenderError(path, format, INSTALL_HINT) from error
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode(errors="replace").strip() if error.stderr else ""
        problem = f"'dot' failed (exit {error.returncode}): {detail or 'no message'}"
        raise DiagramRenderError(path, format, problem) from error
    return image


def save_diagram(
    path: str | Path,
    view: View = "combined",
    *,
    current: StateSource | None = None,
    events: Iterable[Event] = (),
    flat: bool = False,
) -> Path:
    """Write a view of the machines to ``path``, in the format its suffix names.

    ``.dot`` (DOT text), ``.mmd`` (Mermaid), ``.md`` (Markdown transition tables),
    ``.svg`` and ``.png`` (rendered by ``dot``). Only the last two need Graphviz.

    Args:
        path: The file to write; its suffix chooses the format.
        view: ``run``, ``loop`` or ``combined``.
        current: Where a run is now (an `Agent`), highlighted (not in Markdown).
        events: A run's event log, drawn as a weighted path (DOT, SVG and PNG only).
        flat: One edge (or table line) per transition instead of the statechart's groups.

    Returns:
        The path written.

    Raises:
        DiagramRenderError: The suffix is not one of `FORMATS`, or rendering failed.
        ValueError: ``view`` is not ``run``, ``loop`` or ``combined``.
        TypeError: ``path`` is not a str or path, or ``current``, ``events`` or ``flat``
            is not what the views take.
    """
    if not isinstance(path, (str, os.PathLike)):
        _checks.refuse_type("path", path, "a str or path of the file to write")
    check_view(view)
    if not isinstance(flat, bool):
        _checks.refuse_type("flat", flat, "True (one edge per row) or False (grouped)")
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        problem = f"unknown suffix {suffix or '(none)'!r}; use one of {', '.join(FORMATS)}"
        raise DiagramRenderError(str(target), suffix.lstrip("."), problem)
    if suffix == ".mmd":
        target.write_text(mermaid(view, current, flat=flat), encoding="utf-8")
    elif suffix == ".md":
        target.write_text(markdown(view, flat=flat), encoding="utf-8")
    else:
        source = diagram(view, current, events, flat=flat)
        if suffix == ".dot":
            target.write_text(source, encoding="utf-8")
        else:
            image_format: ImageFormat = "svg" if suffix == ".svg" else "png"
            target.write_bytes(render(source, image_format, str(target)))
    return target
