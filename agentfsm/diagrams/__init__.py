"""Diagrams of the machines (Graphviz DOT, SVG and PNG with `dot`)."""
