"""The ``agentfsm`` command line.

``demo``, ``table``, ``verify``, ``diagram`` (of the machines, or of a stored run's path),
``runs`` (the runs of a store), ``inspect`` (where one stored run is), ``fork`` (a new run
from a rest point of a stored one), ``simulate`` (the deterministic simulation), ``ui`` (a live
web view of a store, `agentfsm.serve`) and ``serve-a2a`` (an agent over the A2A protocol).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO, cast

from agentfsm import _checks as checks
from agentfsm._demo import fresh_folder, run_story
from agentfsm._runs_cli import (
    DEFAULT_EVENTS,
    fork_command,
    fork_edits,
    inspect_command,
    run_diagram_command,
    runs_command,
)
from agentfsm._sim_cli import add_simulate_command, simulate_command
from agentfsm._terminal import TerminalSafe, terminal_safe
from agentfsm.diagrams import FORMATS, View, markdown_table, save_diagram
from agentfsm.errors import AgentFSMError, DiagramRenderError
from agentfsm.states import TABLES, MachineName
from agentfsm.stores.sqlite import DEFAULT_PATH
from agentfsm.verify.command import add_arguments, run_verify

_VIEWS: dict[str, View] = {"run": "run", "loop": "loop", "combined": "combined"}
_STORE_HELP = (
    "the run store to read: a SQLite file, sqlite:///PATH or postgresql://… "
    f"(default: {DEFAULT_PATH}); it is never created"
)


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _add_store_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runs = commands.add_parser("runs", help="list the runs of a store")
    runs.add_argument("--store", metavar="STORE", help=_STORE_HELP)
    inspect = commands.add_parser(
        "inspect",
        help="show where a stored run is: states, turn, pending calls, last events",
    )
    inspect.add_argument("run_id", metavar="RUN_ID")
    inspect.add_argument("--store", metavar="STORE", help=_STORE_HELP)
    inspect.add_argument(
        "--events",
        type=_non_negative,
        default=DEFAULT_EVENTS,
        metavar="N",
        help=f"how many of the last events to list (default: {DEFAULT_EVENTS})",
    )
    _add_fork_command(commands)


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a seq, a whole number >= 1, got {text!r}")
    return value


def _add_fork_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fork = commands.add_parser(
        "fork",
        help="fork a stored run: a new run that begins where it was at a rest point",
        description="Make a new run that begins where RUN_ID was at the rest point --at "
        "(default: its last one; with --nearest, the last one at or before --at). The origin "
        "is not changed; the new run's log references the origin's up to there. Take it up "
        "with an Agent on the same store.",
    )
    fork.add_argument("run_id", metavar="RUN_ID")
    fork.add_argument("--store", metavar="STORE", help=_STORE_HELP.replace("read", "use"))
    fork.add_argument("--at", type=_positive, metavar="SEQ", help="the rest point to fork at")
    fork.add_argument(
        "--nearest",
        action="store_true",
        help="if --at is no rest point, fork at the last rest point before it (else an error)",
    )
    fork.add_argument("--run-id", dest="new_run_id", metavar="ID", help="the new run's id")
    fork.add_argument(
        "--replace-user-message", metavar="TEXT", help="the last user message says TEXT"
    )
    fork.add_argument(
        "--edit-call",
        nargs=2,
        metavar=("CALL_ID", "JSON"),
        help="the pending call CALL_ID is made with these arguments (a JSON object)",
    )
    fork.add_argument("--add-message", metavar="TEXT", help="add a user message")


def _add_ui_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ui = commands.add_parser(
        "ui",
        help="serve a live web view of a store's runs: the machines, the event log, the "
        "conversation, and the operator's actions (needs the ui extra)",
    )
    ui.add_argument("--store", metavar="STORE", help=_STORE_HELP)
    ui.add_argument("--host", default="127.0.0.1", help="where to listen (default: 127.0.0.1)")
    ui.add_argument(
        "--port", type=_non_negative, default=8765, metavar="N", help="default 8765; 0 picks one"
    )
    ui.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="your agent factory, (run_id, store) -> Agent, so the view can approve, deny "
        "and answer (the run then calls your model and tools)",
    )
    ui.add_argument(
        "--temporal",
        metavar="HOST:PORT",
        help="the store's runs run on Temporal: actions are sent to their workflows as "
        "updates (needs the temporal extra and --task-queue)",
    )
    ui.add_argument("--task-queue", metavar="QUEUE", help="the runs' task queue (--temporal)")
    ui.add_argument(
        "--token",
        metavar="TOKEN",
        default=os.environ.get("AGENTFSM_UI_TOKEN", ""),
        help="the secret every request must carry (default: $AGENTFSM_UI_TOKEN, else a new "
        "one); it is printed in the URL",
    )
    ui.add_argument(
        "--no-token",
        action="store_true",
        help="ask for no token (only on a loopback --host; any page your browser opens "
        "can then use the view)",
    )
    ui.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name the Host header may give besides the bound address's (repeatable; "
        "'*' for any), e.g. the name of a proxy in front",
    )
    _add_grace(ui)


def _add_grace(parser: argparse.ArgumentParser, default: float = 10.0) -> None:
    parser.add_argument(
        "--grace",
        type=checks.seconds_option,
        default=default,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, how long the work in flight gets to finish before it "
        f"is cut (default: {default:g})",
    )


def _ui(args: argparse.Namespace) -> int:
    try:
        from agentfsm.serve.command import ui_command
    except ImportError as error:
        print(
            f"agentfsm ui: error: the web view needs the ui extra ({error}); "
            "install it with: pip install 'agentfsm[ui]'",
            file=sys.stderr,
        )
        return 1
    store = args.store if args.store is not None else str(DEFAULT_PATH)
    return ui_command(
        store,
        args.host,
        args.port,
        args.agent,
        sys.stdout,
        temporal=args.temporal,
        task_queue=args.task_queue,
        token=None if args.no_token else args.token,
        allow_hosts=args.allow_host,
        grace=args.grace,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentfsm",
        description="Demo, verify and draw agentfsm's lifecycle machines; list and inspect "
        "the runs of a store.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run one agent through every state, pausing in one process and resuming in "
        "another; print the transcript and write the diagrams",
    )
    demo.add_argument(
        "--dir",
        metavar="DIR",
        help="where to make the demo's fresh folder (store and SVGs); default: here",
    )
    demo.add_argument(
        "--model",
        metavar="SPEC",
        help="a real model instead of the scripted one, e.g. openai:gpt-4o-mini (it needs "
        "OPENAI_API_KEY; OPENAI_BASE_URL chooses an OpenAI-compatible server)",
    )
    table = commands.add_parser("table", help="print a machine's transitions as Markdown")
    table.add_argument("machine", choices=[name.value for name in TABLES])
    add_arguments(
        commands.add_parser(
            "verify", help="explore both machines exhaustively and check their invariants"
        )
    )
    diagram = commands.add_parser(
        "diagram",
        help="draw the machines; the output file's suffix chooses the format",
        description=f"Draw the machines to a file; its suffix chooses the format: "
        f"{', '.join(FORMATS)} (.svg and .png need Graphviz's 'dot'). With --run, draw "
        "a stored run: its current states highlighted, the edges its event log took "
        "weighted by count; without -o its DOT goes to stdout.",
    )
    diagram.add_argument("view", nargs="?", default="combined", choices=list(_VIEWS))
    diagram.add_argument(
        "-o", "--output", metavar="FILE", help="file to write (required without --run)"
    )
    diagram.add_argument(
        "--flat", action="store_true", help="one edge per transition, no groups or H"
    )
    diagram.add_argument("--run", metavar="RUN_ID", help="draw this stored run's path")
    diagram.add_argument("--store", metavar="STORE", help=_STORE_HELP + " (with --run)")
    _add_store_commands(commands)
    add_simulate_command(commands)
    _add_ui_command(commands)
    _add_serve_commands(commands)
    _add_worker_command(commands)
    return parser


def _add_worker_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    try:
        from agentfsm.temporal.command import add_worker_command
    except ImportError:  # pragma: no cover - without the temporal extra
        worker = commands.add_parser("worker", help="run a Temporal worker (temporal extra)")
        worker.add_argument("rest", nargs=argparse.REMAINDER)
        return
    add_worker_command(commands)


def _worker(args: argparse.Namespace) -> int:
    try:
        from agentfsm.temporal.command import worker_command
    except ImportError as error:  # pragma: no cover - without the temporal extra
        print(
            f"agentfsm worker: error: {error}; install the extra: pip install "
            "'agentfsm[temporal]'",
            file=sys.stderr,
        )
        return 1
    return worker_command(args, sys.stderr, sys.stdout)


def _add_serve_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve-a2a",
        help="serve an agent over the A2A protocol (needs the a2a extra)",
    )
    serve.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:FACTORY",
        help="a function (run_id, store) -> Agent; the current directory is importable",
    )
    serve.add_argument(
        "--store",
        metavar="STORE",
        default=str(DEFAULT_PATH),
        help=(
            "the run store: a SQLite file, sqlite:///PATH, postgresql://… or memory: "
            f"(default: {DEFAULT_PATH}); created if missing"
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    serve.add_argument("--port", type=_non_negative, default=8000, help="default: 8000; 0 for any")
    serve.add_argument("--name", default="agentfsm", help="the agent card's name")
    _add_grace(serve)


def _serve_a2a(args: argparse.Namespace) -> int:
    try:
        from agentfsm.serve.a2a_cli import serve_command
    except ImportError as error:
        print(
            f"agentfsm serve-a2a: error: {error}; install the extra: pip install 'agentfsm[a2a]'",
            file=sys.stderr,
        )
        return 1
    return serve_command(
        args.agent,
        args.store,
        args.host,
        args.port,
        args.name,
        sys.stdout,
        sys.stderr,
        grace=args.grace,
    )


def _diagram(view: str, output: str, out: TextIO, flat: bool) -> int:
    try:
        written = save_diagram(output, _VIEWS[view], flat=flat)
    except (DiagramRenderError, OSError) as error:
        print(f"agentfsm diagram: error: {terminal_safe(str(error))}", file=sys.stderr)
        return 1
    print(f"wrote {written}", file=out)
    return 0


def _diagram_command(
    parser: argparse.ArgumentParser, args: argparse.Namespace, out: TextIO
) -> int:
    if args.run is not None:
        return run_diagram_command(
            args.run, args.store, _VIEWS[args.view], args.output, out, flat=args.flat
        )
    if args.store is not None:
        parser.error("diagram: --store needs --run RUN_ID")
    if args.output is None:
        parser.error("diagram: the following arguments are required: -o/--output")
    return _diagram(args.view, args.output, out, args.flat)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (``agentfsm table run | head``): stop quietly, as cat does,
        # and keep Python from complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # Everything printed passes through one filter: data (a stored question, a model's
    # words) never reaches the terminal as control sequences.
    out = cast(TextIO, TerminalSafe(sys.stdout))
    if args.command == "verify":
        return run_verify(args, out)
    if args.command == "diagram":
        return _diagram_command(parser, args, out)
    if args.command == "runs":
        return runs_command(args.store, out)
    if args.command == "inspect":
        return inspect_command(args.run_id, args.store, args.events, out)
    if args.command == "fork":
        edits = fork_edits(args.replace_user_message, args.edit_call, args.add_message)
        return fork_command(
            args.run_id, args.store, args.at, args.new_run_id, edits, out, nearest=args.nearest
        )
    if args.command == "simulate":
        return simulate_command(args, out)
    if args.command in _SERVERS:
        return _SERVERS[args.command](args)
    if args.command == "table":
        print(markdown_table(TABLES[MachineName(args.machine)]), file=out)
        return 0
    return _demo_command(args.dir, args.model, out)


_SERVERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ui": _ui,
    "serve-a2a": _serve_a2a,
    "worker": _worker,
}
"""The commands that serve until interrupted, by name."""


def _demo_command(base: str | None, model: str | None, out: TextIO) -> int:
    if model is None and os.environ.get("OPENAI_API_KEY"):
        print(
            "(OPENAI_API_KEY is set: add --model openai:gpt-4o-mini to use a real model)\n",
            file=out,
        )
    try:
        folder = fresh_folder(Path(base) if base is not None else None)
        run_story(out, folder, model)
    except (AgentFSMError, OSError, RuntimeError) as error:
        print(f"agentfsm demo: {terminal_safe(str(error))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
