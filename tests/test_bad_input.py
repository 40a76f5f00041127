"""Bad input is refused at the door (issue 18, part 2): one table across the public API.

Each row calls the public API with one bad input and says which error it must raise and
which argument its message must name. Every row runs against one world — an Agent waiting
for an approval in a real SQLite store, a registry, a ToolSystem, hooks, a foreign SQLite
file — and checks that the refusal changed nothing: the Agent's state, conversation, trace
and pending calls, the registry, the hooks, and every byte of every file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentfsm import (
    Agent,
    Decision,
    ScriptedModel,
    StoreError,
    Tool,
    ToolCall,
    ToolRegistry,
    check_log,
    combined_diagram,
    open_store,
    replay,
    run_diagram,
    save_diagram,
    tool,
)
from agentfsm.cli import main
from agentfsm.diagrams import diagram, mermaid
from agentfsm.errors import (
    DuplicateToolError,
    GuardFailedError,
    InvalidToolNameError,
    ModelConfigError,
    SchemaVersionError,
    StoreCorruptError,
    ToolDefinitionError,
    ToolSchemaError,
)
from agentfsm.llm import OpenAIModel, RetryPolicy, resolve_model
from agentfsm.stores import SQLiteStore
from agentfsm.testing import FakeClock
from agentfsm.tools import HookKind, Hooks, ToolContext, ToolSystem
from agentfsm.verify import default_domains, load_class, verify, verify_tree


class CommandRefusedError(Exception):
    """The CLI refused its arguments: a non-zero exit, its stderr as the message."""


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


@tool(policy="require_approval")
def book(city: str) -> str:
    """Book a table."""
    return f"booked in {city}"


def _plain(city: str) -> str:
    return city


@dataclass
class World:
    """Everything a row may call, and the files whose bytes must not change."""

    root: Path
    agent: Agent
    store: SQLiteStore
    registry: ToolRegistry
    system: ToolSystem
    hooks: Hooks

    @property
    def store_path(self) -> Path:
        return self.root / "runs.db"

    @property
    def foreign(self) -> Path:
        return self.root / "app.db"

    @property
    def newer(self) -> Path:
        return self.root / "newer.db"

    def fingerprint(self) -> object:
        files = {
            str(path.relative_to(self.root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and not path.name.endswith("-shm")  # SQLite's shared memory
        }
        agent = self.agent
        return (
            agent.state,
            agent.loop_state,
            agent.messages,
            len(agent.trace),
            agent.pending,
            agent.snapshot().model_dump(exclude={"trace"}),
            self.registry.names,
            [len(self.hooks.handlers(kind)) for kind in HookKind],
            files,
        )


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    model = ScriptedModel().tool_call("book", city="Rome").text("Booked.")
    store = SQLiteStore(tmp_path / "runs.db")
    agent = Agent(model, [weather, book], run_id="r", store=store)
    agent.start()
    assert agent.submit("Book Rome").state == "requires_action"
    assert [call.id for call in agent.pending] == ["call_1"]
    conn = sqlite3.connect(tmp_path / "app.db")
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    conn = sqlite3.connect(tmp_path / "newer.db")
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    (tmp_path / "a-directory").mkdir()
    yield World(tmp_path, agent, store, ToolRegistry([weather]), ToolSystem([weather]), Hooks())
    store.close()


def cli(*args: str) -> int:
    """Run the CLI in process; raise `CommandRefusedError` with its stderr if it refuses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    if code != 0:
        raise CommandRefusedError(err.getvalue())
    return code


CALL = ToolCall(id="x1", name="weather", arguments='{"city": "Oslo"}')
CONTEXT = ToolContext(run_id="r")
SCRIPTED = ScriptedModel()


@dataclass(frozen=True)
class Row:
    """One bad input: the call, the error it must raise, and what its message must name."""

    id: str
    call: Callable[[World], object]
    error: type[BaseException]
    names: str


def _agent(**options: object) -> Callable[[World], object]:
    def build(world: World) -> object:
        model = options.pop("model", SCRIPTED) if "model" in options else SCRIPTED
        return Agent(model, **options)  # type: ignore[arg-type]

    return build


def _tool(**options: object) -> Callable[[World], object]:
    return lambda world: tool(**options)(_plain)  # type: ignore[call-overload]


def _openai(**options: object) -> Callable[[World], object]:
    return lambda world: OpenAIModel(**{"model": "m", "api_key": "k", **options})  # type: ignore[arg-type]


AGENT_ROWS = [
    Row("agent-model-int", lambda w: Agent(123), TypeError, "model"),  # type: ignore[arg-type]
    Row("agent-model-empty", lambda w: Agent(""), ValueError, "model"),
    Row("agent-tools-int", _agent(tools=42), TypeError, "tools"),
    Row("agent-tools-str", _agent(tools="weather"), TypeError, "tools"),
    Row("agent-system-prompt", _agent(system_prompt=5), TypeError, "system_prompt"),
    Row("agent-max-iterations-0", _agent(max_iterations=0), ValueError, "max_iterations"),
    Row("agent-max-iterations-str", _agent(max_iterations="3"), TypeError, "max_iterations"),
    Row("agent-max-iterations-bool", _agent(max_iterations=True), TypeError, "max_iterations"),
    Row("agent-max-turns-str", _agent(max_turns="x"), TypeError, "max_turns"),
    Row("agent-max-turns-negative", _agent(max_turns=-2), ValueError, "max_turns"),
    Row("agent-max-turns-zero", _agent(max_turns=0), ValueError, "max_turns"),
    Row("agent-context-window-str", _agent(context_window="big"), TypeError, "context_window"),
    Row("agent-context-window-zero", _agent(context_window=0), ValueError, "context_window"),
    Row("agent-input-policy", _agent(input_policy="sometimes"), ValueError, "input_policy"),
    Row("agent-hooks", _agent(hooks=42), TypeError, "hooks"),
    Row("agent-listeners-str", _agent(listeners="print"), TypeError, "listeners"),
    Row("agent-listeners-item", _agent(listeners=[1]), TypeError, "listeners"),
    Row("agent-run-id-int", _agent(run_id=123), TypeError, "run_id"),
    Row("agent-run-id-empty", _agent(run_id=""), ValueError, "run_id"),
    Row("agent-user-id", _agent(user_id=7), TypeError, "user_id"),
    Row("agent-enabled-str", _agent(enabled_tools="weather"), TypeError, "enabled_tools"),
    Row(
        "agent-enabled-unknown",
        lambda w: Agent(SCRIPTED, w.registry, enabled_tools={"nope"}),
        ValueError,
        "enabled_tools",
    ),
    Row("agent-enabled-item", _agent(enabled_tools=[1]), TypeError, "enabled_tools"),
    Row("agent-ask-user", _agent(ask_user="yes"), TypeError, "ask_user"),
    Row("agent-action-timeout-neg", _agent(action_timeout=-5), ValueError, "action_timeout"),
    Row("agent-action-timeout-str", _agent(action_timeout="soon"), TypeError, "action_timeout"),
    Row(
        "agent-input-timeout-nan", _agent(input_timeout=float("nan")), ValueError, "input_timeout"
    ),
    Row("agent-clock", _agent(clock=5), TypeError, "clock"),
    Row("agent-timer", _agent(timer="now"), TypeError, "timer"),
    Row("agent-engine", _agent(engine="fast"), ValueError, "engine"),
    Row("agent-store-path", _agent(store="runs.db"), TypeError, "store"),
    Row(
        "agent-existing-run-bad-store",
        lambda w: Agent(SCRIPTED, run_id="r", store=str(w.store_path)),  # type: ignore[arg-type]
        TypeError,
        "store",
    ),
    Row("submit-bytes", lambda w: w.agent.submit(b"hi"), TypeError, "text"),  # type: ignore[arg-type]
    Row("submit-none", lambda w: w.agent.submit(None), TypeError, "text"),  # type: ignore[arg-type]
    Row("provide-input-int", lambda w: w.agent.provide_input(42), TypeError, "text"),  # type: ignore[arg-type]
    Row(
        "resolve-list",
        lambda w: w.agent.resolve_action([Decision.approve()]),  # type: ignore[arg-type]
        TypeError,
        "decisions",
    ),
    Row(
        "resolve-unknown-id",
        lambda w: w.agent.resolve_action({"c9": "approve"}),
        GuardFailedError,
        "'c9'",
    ),
    Row(
        "resolve-int-key",
        lambda w: w.agent.resolve_action({1: "approve"}),  # type: ignore[dict-item]
        TypeError,
        "decisions",
    ),
    Row(
        "resolve-bad-value",
        lambda w: w.agent.resolve_action({"call_1": "maybe"}),
        ValueError,
        "decisions['call_1']",
    ),
    Row("add-listener", lambda w: w.agent.add_listener(42), TypeError, "listener"),  # type: ignore[arg-type]
    Row("agent-on-kind", lambda w: w.agent.on("before_lunch"), ValueError, "kind"),
    Row("remove-listener", lambda w: w.agent.remove_listener(print), ValueError, "listener"),
]

TOOL_ROWS = [
    Row("tool-not-callable", lambda w: Tool(42), TypeError, "function"),  # type: ignore[arg-type]
    Row("tool-timeout-str", _tool(timeout="5s"), ToolDefinitionError, "timeout"),
    Row("tool-timeout-negative", _tool(timeout=-1), ToolDefinitionError, "timeout"),
    Row("tool-timeout-bool", _tool(timeout=True), ToolDefinitionError, "timeout"),
    Row("tool-policy", _tool(policy="maybe"), ToolDefinitionError, "policy"),
    Row("tool-idempotent", _tool(idempotent="yes"), ToolDefinitionError, "idempotent"),
    Row("tool-client-side", _tool(client_side=1), ToolDefinitionError, "client_side"),
    Row("tool-retry-on-class", _tool(retry_on=ValueError), ToolDefinitionError, "retry_on"),
    Row("tool-description", _tool(description=5), ToolDefinitionError, "description"),
    Row("tool-parameters-str", _tool(parameters="{}"), ToolDefinitionError, "parameters"),
    Row("tool-name", lambda w: Tool(_plain, name="bad name!"), InvalidToolNameError, "name"),
    Row(
        "tool-missing-ref",
        lambda w: Tool(
            _plain,
            parameters={"type": "object", "properties": {"city": {"$ref": "#/$defs/Nope"}}},
        ),
        ToolSchemaError,
        "$ref",
    ),
    Row("registry-int", lambda w: ToolRegistry(42), TypeError, "tools"),  # type: ignore[arg-type]
    Row("registry-str", lambda w: ToolRegistry("weather"), TypeError, "tools"),  # type: ignore[arg-type]
    Row("registry-register", lambda w: w.registry.register(42), TypeError, "item"),  # type: ignore[arg-type]
    Row(
        "registry-duplicate", lambda w: w.registry.register(weather), DuplicateToolError, "weather"
    ),
    Row("registry-enabled-str", lambda w: w.registry.enabled("weather"), TypeError, "enabled"),
    Row(
        "registry-openai-tools-item",
        lambda w: w.registry.openai_tools(["weather", 3]),  # type: ignore[list-item]
        TypeError,
        "enabled",
    ),
    Row("registry-get-int", lambda w: w.registry.get(42), TypeError, "name"),  # type: ignore[arg-type]
    Row("system-max-attempts", lambda w: ToolSystem(max_attempts=0), ValueError, "max_attempts"),
    Row("system-cancel-grace", lambda w: ToolSystem(cancel_grace=-1), ValueError, "cancel_grace"),
    Row("system-hooks", lambda w: ToolSystem(hooks={}), TypeError, "hooks"),  # type: ignore[arg-type]
    Row("system-limits", lambda w: ToolSystem(limits=5), TypeError, "limits"),  # type: ignore[arg-type]
    Row("system-observer", lambda w: ToolSystem(observer=5), TypeError, "observer"),  # type: ignore[arg-type]
    Row("system-sleep", lambda w: ToolSystem(sleep="later"), TypeError, "sleep"),  # type: ignore[arg-type]
    Row(
        "round-calls-str",
        lambda w: w.system.run_round_sync("weather", CONTEXT),  # type: ignore[arg-type]
        TypeError,
        "calls",
    ),
    Row(
        "round-context",
        lambda w: w.system.run_round_sync([CALL], "r"),  # type: ignore[arg-type]
        TypeError,
        "context",
    ),
    Row(
        "round-decisions-list",
        lambda w: w.system.run_round_sync([CALL], CONTEXT, decisions=["approve"]),  # type: ignore[arg-type]
        TypeError,
        "decisions",
    ),
    Row(
        "round-enabled-str",
        lambda w: w.system.run_round_sync([CALL], CONTEXT, enabled="weather"),
        TypeError,
        "enabled",
    ),
    Row(
        "round-messages-str",
        lambda w: w.system.run_round_sync([CALL], CONTEXT, messages="hi"),  # type: ignore[arg-type]
        TypeError,
        "messages",
    ),
    Row(
        "awaiting-enabled-str",
        lambda w: w.system.awaiting_decision([CALL], enabled="weather"),
        TypeError,
        "enabled",
    ),
    Row("hooks-handler", lambda w: w.hooks.add("before_llm", 5), TypeError, "handler"),  # type: ignore[arg-type]
    Row("hooks-kind", lambda w: w.hooks.add("before_lunch", print), ValueError, "kind"),
]

STORE_ROWS = [
    Row("sqlite-directory", lambda w: SQLiteStore(w.root / "a-directory"), ValueError, "path"),
    Row("sqlite-path-int", lambda w: SQLiteStore(42), TypeError, "path"),  # type: ignore[arg-type]
    Row(
        "sqlite-synchronous",
        lambda w: SQLiteStore(w.root / "new.db", synchronous="OFF"),  # type: ignore[arg-type]
        ValueError,
        "synchronous",
    ),
    Row(
        "sqlite-read-only-str",
        lambda w: SQLiteStore(w.root / "new.db", read_only="yes"),  # type: ignore[arg-type]
        TypeError,
        "read_only",
    ),
    Row(
        "sqlite-connect",
        lambda w: SQLiteStore(w.root / "new.db", connect="sqlite3"),  # type: ignore[arg-type]
        TypeError,
        "connect",
    ),
    Row("sqlite-foreign-file", lambda w: SQLiteStore(w.foreign), StoreCorruptError, "app.db"),
    Row(
        "sqlite-foreign-read-only",
        lambda w: SQLiteStore(w.foreign, read_only=True),
        StoreCorruptError,
        "app.db",
    ),
    Row(
        "sqlite-read-only-missing",
        lambda w: SQLiteStore(w.root / "missing.db", read_only=True),
        StoreError,
        "missing.db",
    ),
    Row("sqlite-other-version", lambda w: SQLiteStore(w.newer), SchemaVersionError, "version 7"),
]

MODEL_ROWS = [
    Row("openai-model-int", _openai(model=42), TypeError, "model"),
    Row("openai-model-empty", _openai(model=""), ValueError, "model"),
    Row("openai-api-key", _openai(api_key=5), TypeError, "api_key"),
    Row("openai-timeout-str", _openai(timeout="5s"), TypeError, "timeout"),
    Row("openai-timeout-zero", _openai(timeout=0), ValueError, "timeout"),
    Row("openai-connect-timeout", _openai(connect_timeout=-1), ValueError, "connect_timeout"),
    Row("openai-deadline", _openai(deadline=-1), ValueError, "deadline"),
    Row("openai-retry", _openai(retry=3), TypeError, "retry"),
    Row("openai-stream", _openai(stream="yes"), TypeError, "stream"),
    Row("openai-base-url", _openai(base_url=5), TypeError, "base_url"),
    Row("openai-clock", _openai(clock=5), TypeError, "clock"),
    Row("scripted-steps-str", lambda w: ScriptedModel("hello"), TypeError, "steps"),  # type: ignore[arg-type]
    Row("scripted-name", lambda w: ScriptedModel(name=""), ValueError, "name"),
    Row("scripted-fallback", lambda w: ScriptedModel(fallback="hi"), TypeError, "fallback"),  # type: ignore[arg-type]
    Row(
        "retry-policy-attempts", lambda w: RetryPolicy(max_attempts=0), ValueError, "max_attempts"
    ),
    Row("resolve-unknown-spec", lambda w: resolve_model("nope:x"), ModelConfigError, "nope:x"),
]


def _log(w: World) -> list[object]:
    """The Agent's log with one item that is not an event at its end."""
    return [*w.store.events("r"), {"seq": 99}]


LOG_ROWS = [
    Row("scripted-step-int", lambda w: ScriptedModel(["ok", 5]), TypeError, "steps[1]"),  # type: ignore[list-item]
    Row("scripted-respond-str", lambda w: ScriptedModel().respond("hi"), TypeError, "response"),  # type: ignore[arg-type]
    Row("scripted-fail-class", lambda w: ScriptedModel().fail(ValueError), TypeError, "error"),  # type: ignore[arg-type]
    Row("scripted-reply-with", lambda w: ScriptedModel().reply_with("hi"), TypeError, "responder"),  # type: ignore[arg-type]
    Row("tool-context-turn", lambda w: ToolContext(run_id="r", turn=-1), ValueError, "turn"),
    Row("open-store-int", lambda w: open_store(5), TypeError, "url"),  # type: ignore[arg-type]
    Row(
        "open-store-create",
        lambda w: open_store(w.root / "new.db", create="no"),  # type: ignore[arg-type]
        TypeError,
        "create",
    ),
    Row("diagram-view", lambda w: diagram("runs", w.agent), ValueError, "view"),  # type: ignore[arg-type]
    Row("diagram-current", lambda w: run_diagram("busy"), TypeError, "current"),  # type: ignore[arg-type]
    Row("diagram-events", lambda w: combined_diagram(w.agent, _log(w)), TypeError, "events["),  # type: ignore[arg-type]
    Row("mermaid-view", lambda w: mermaid("all"), ValueError, "view"),  # type: ignore[arg-type]
    Row(
        "save-diagram-view",
        lambda w: save_diagram(w.root / "x.svg", "everything"),  # type: ignore[arg-type]
        ValueError,
        "view",
    ),
    Row("save-diagram-path", lambda w: save_diagram(5), TypeError, "path"),  # type: ignore[arg-type]
    Row(
        "save-diagram-events",
        lambda w: save_diagram(w.root / "x.dot", events=_log(w)),  # type: ignore[arg-type]
        TypeError,
        "events[",
    ),
    Row("check-log-int", lambda w: check_log(5), TypeError, "events"),  # type: ignore[arg-type]
    Row("check-log-item", lambda w: check_log(_log(w)), TypeError, "events["),  # type: ignore[arg-type]
    Row("replay-str", lambda w: replay("r"), TypeError, "events"),  # type: ignore[arg-type]
    Row("replay-item", lambda w: replay(_log(w)), TypeError, "events["),  # type: ignore[arg-type]
]

VERIFY_ROWS = [
    Row("verify-run-int", lambda w: verify(5), TypeError, "run"),  # type: ignore[arg-type]
    Row("verify-loop-instance", lambda w: verify(loop=w.agent), TypeError, "loop"),  # type: ignore[arg-type]
    Row(
        "verify-max-iterations-str",
        lambda w: verify(max_iterations="3"),
        TypeError,
        "max_iterations",
    ),  # type: ignore[arg-type]
    Row(
        "verify-max-iterations-zero",
        lambda w: verify(max_iterations=0),
        ValueError,
        "max_iterations",
    ),
    Row("verify-domains-dict", lambda w: verify(domains={}), TypeError, "domains"),  # type: ignore[arg-type]
    Row("verify-data", lambda w: verify(data="RunData"), TypeError, "data"),  # type: ignore[arg-type]
    Row("verify-strict", lambda w: verify(strict=1), TypeError, "strict"),  # type: ignore[arg-type]
    Row(
        "domains-max-iterations-float", lambda w: default_domains(2.5), TypeError, "max_iterations"
    ),  # type: ignore[arg-type]
    Row("domains-typed", lambda w: default_domains(typed="yes"), TypeError, "typed"),  # type: ignore[arg-type]
    Row("verify-tree-zero", lambda w: verify_tree(0), ValueError, "max_iterations"),
    Row("verify-tree-bool", lambda w: verify_tree(True), TypeError, "max_iterations"),
    Row("load-class-int", lambda w: load_class(5), TypeError, "reference"),  # type: ignore[arg-type]
    Row("fake-clock-start", lambda w: FakeClock("now"), TypeError, "start"),  # type: ignore[arg-type]
    Row("fake-clock-nan", lambda w: FakeClock(float("nan")), ValueError, "start"),
    Row("fake-clock-back", lambda w: FakeClock().advance(-1), ValueError, "seconds"),
]

CLI_ROWS = [
    Row(
        "cli-events-negative",
        lambda w: cli("inspect", "r", "--events", "-1"),
        CommandRefusedError,
        "--events",
    ),
    Row(
        "cli-events-word",
        lambda w: cli("inspect", "r", "--events", "x"),
        CommandRefusedError,
        "--events",
    ),
    Row(
        "cli-store-directory",
        lambda w: cli("runs", "--store", str(w.root / "a-directory")),
        CommandRefusedError,
        "--store",
    ),
    Row(
        "cli-store-missing",
        lambda w: cli("inspect", "r", "--store", str(w.root / "missing.db")),
        CommandRefusedError,
        "--store",
    ),
    Row(
        "cli-store-foreign",
        lambda w: cli("runs", "--store", str(w.foreign)),
        CommandRefusedError,
        "app.db",
    ),
    Row(
        "cli-store-other-version",
        lambda w: cli("runs", "--store", str(w.newer)),
        CommandRefusedError,
        "version 7",
    ),
    Row(
        "cli-diagram-store-without-run",
        lambda w: cli("diagram", "--store", str(w.store_path)),
        CommandRefusedError,
        "--run",
    ),
    Row("cli-table-machine", lambda w: cli("table", "nosuch"), CommandRefusedError, "machine"),
    Row(
        "cli-diagram-view",
        lambda w: cli("diagram", "nosuch", "-o", "x.dot"),
        CommandRefusedError,
        "view",
    ),
    Row(
        "cli-unknown-run",
        lambda w: cli("inspect", "nope", "--store", str(w.store_path)),
        CommandRefusedError,
        "'nope'",
    ),
]

ROWS = AGENT_ROWS + TOOL_ROWS + STORE_ROWS + MODEL_ROWS + LOG_ROWS + VERIFY_ROWS + CLI_ROWS


def test_the_table_has_at_least_sixty_bad_inputs_across_the_api() -> None:
    assert len(ROWS) >= 60
    assert len({row.id for row in ROWS}) == len(ROWS)
    groups = (TOOL_ROWS, STORE_ROWS, MODEL_ROWS, LOG_ROWS, VERIFY_ROWS, CLI_ROWS)
    assert all(len(group) >= 5 for group in groups)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input_is_refused_naming_the_argument_and_changes_nothing(
    world: World, row: Row
) -> None:
    before = world.fingerprint()

    with pytest.raises(row.error) as raised:
        row.call(world)

    assert row.names in str(raised.value)
    assert world.fingerprint() == before
    # The refused Agent still takes its next legal event.
    assert world.agent.resolve_action({"call_1": "approve"}).state == "completed"


def test_errors_before_start_show_the_state_by_its_value() -> None:
    agent = Agent(ScriptedModel())

    with pytest.raises(Exception, match="in state 'created'") as raised:
        agent.submit("hi")

    assert "RunState" not in str(raised.value)


def test_start_of_a_stored_shut_down_run_is_refused_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        agent = Agent(ScriptedModel(), run_id="done", store=store)
        agent.start()
        agent.shutdown()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.endswith("-shm")}

    with SQLiteStore(path) as store:
        restored = Agent(ScriptedModel(), run_id="done", store=store)
        with pytest.raises(Exception, match="'start' is not allowed in state 'shutdown'"):
            restored.start()
        assert restored.state == "shutdown"
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.endswith("-shm")}
    assert after == before
