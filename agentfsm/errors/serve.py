"""Errors of drawing diagrams and of the live view's actions."""

from __future__ import annotations

from agentfsm.errors._base import AgentFSMError


class DiagramRenderError(AgentFSMError):
    """A diagram cannot be written as asked.

    Graphviz's ``dot`` program is not installed (DOT and Mermaid text still work without
    it), ``dot`` failed, or the file's suffix names no format agentfsm writes.

    Attributes:
        path: The file that was asked for.
        format: The format asked for (the suffix without its dot).
        problem: What went wrong.
    """

    def __init__(self, path: str, format: str, problem: str) -> None:
        self.path = path
        self.format = format
        self.problem = problem
        super().__init__(f"cannot write diagram {path!r} as {format!r}: {problem}")


class ActionError(AgentFSMError):
    """An operator action of the live view (`agentfsm.serve`) was refused.

    It carries the HTTP status of the answer, a kind and the message the page shows.

    Args:
        status: The HTTP status of the answer (400 bad request, 404 no such run, 409
            refused, 500 failed).
        kind: What went wrong: the error class's name (``IllegalTransitionError``…).
        message: The message the page shows.
    """

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status."""
        self.kind = kind
        """What went wrong."""
        self.message = message
        """The message shown."""

    def as_json(self) -> dict[str, str]:
        """The error as the API answers it."""
        return {"error": self.kind, "message": self.message}
