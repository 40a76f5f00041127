"""SVG and PNG rendered by the real ``dot``; a clear error where ``dot`` is missing."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentfsm import combined_diagram, save_diagram
from agentfsm.diagrams import mermaid, render
from agentfsm.errors import DiagramRenderError
from agentfsm.states import LOOP_TABLE, RUN_TABLE

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' missing")
SVG = "{http://www.w3.org/2000/svg}"


@needs_dot
def test_svg_is_well_formed_and_names_every_state(tmp_path: Path) -> None:
    path = save_diagram(tmp_path / "both.svg")

    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert set(RUN_TABLE.states) | set(LOOP_TABLE.states) <= texts
    assert {"submit", "[submit_allowed]"} <= texts  # grouped: a lone guard on its own line
    flat = ET.parse(save_diagram(tmp_path / "flat.svg", flat=True)).getroot()
    assert "submit [submit_allowed]" in {t.text for t in flat.iter(f"{SVG}text")}


@needs_dot
def test_svg_keeps_the_node_classes(tmp_path: Path) -> None:
    root = ET.fromstring(render(combined_diagram(), "svg"))
    classes = {g.get("class") for g in root.iter(f"{SVG}g")}
    assert {"node initial", "node waiting", "node final", "node state"} <= classes


@needs_dot
def test_png_starts_with_the_png_signature(tmp_path: Path) -> None:
    path = save_diagram(tmp_path / "run.png", "run")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_dot_raises_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(DiagramRenderError, match="install Graphviz") as caught:
        save_diagram(tmp_path / "run.svg", "run")
    assert (caught.value.format, caught.value.path) == ("svg", str(tmp_path / "run.svg"))
    assert not (tmp_path / "run.svg").exists()
    # text formats need no renderer
    assert save_diagram(tmp_path / "run.dot", "run").read_text().startswith("digraph")
    assert save_diagram(tmp_path / "run.mmd", "run").read_text() == mermaid("run")


def test_dot_failing_on_bad_source_is_a_render_error() -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' missing")
    with pytest.raises(DiagramRenderError, match="'dot' failed"):
        render("digraph { a -> }", "svg")


def test_an_unknown_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DiagramRenderError, match=r"unknown suffix '\.jpg'; use one of \.dot"):
        save_diagram(tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []
