"""The live view's ASGI app: pages, a JSON API, Server-Sent Events and operator actions.

`create_app` builds a Starlette app over one run store. Mount it in your own Starlette or
FastAPI app (``app.mount("/runs-ui", create_app("runs.db"))``): every URL the pages use is
relative, so it works under any prefix. The store is a SQLite file or any store URL
(`agentfsm.serve.stores`); live updates come from `default_feed` (PostgreSQL's
LISTEN/NOTIFY, or a poll by seq).

Routes (relative to where it is mounted):

- ``GET /``: the runs page; ``GET /run?id=RUN_ID``: a run's page (static HTML and script).
- ``GET /api/runs``, ``GET /api/runs/{run_id}``: the same data as JSON.
- ``GET /api/stream/runs``, ``GET /api/stream/runs/{run_id}``: live updates (SSE).
- ``POST /api/runs/{run_id}/actions``: an operator action (`agentfsm.serve.actions`).

Every run id a store accepts is reachable: ``{run_id}`` may hold ``/``, and each route
also takes the id as ``?id=`` (``/api/run?id=``, ``/api/stream/run?id=``,
``/api/run/actions?id=``), which is what the pages use, since a browser rewrites a path
segment ``.`` or ``..`` before sending it. `agentfsm.serve.guard` decides which requests
reach these routes (a token, the Host, where an action comes from); every response carries
the security headers of `agentfsm.serve.headers` (a Content-Security-Policy among them).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from urllib.parse import quote

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from agentfsm import _checks
from agentfsm.errors import ActionError
from agentfsm.serve.actions import AgentFactory, RunDriver, parse_action, perform
from agentfsm.serve.feed import DEFAULT_INTERVAL, ChangeFeed, PollingFeed
from agentfsm.serve.guard import Guard
from agentfsm.serve.headers import SecurityHeaders
from agentfsm.serve.stores import open_read_only, open_to_read, sqlite_path
from agentfsm.serve.views import RUN_STATES, RunRows, diagram_svg, event_view, run_view
from agentfsm.states.events import Event
from agentfsm.states.json import JSONObject, JSONValue
from agentfsm.stores.base import RunStore
from agentfsm.stores.urls import open_store

__all__ = ["STATIC", "create_app", "default_feed", "open_read_only"]

STATIC = Path(str(files("agentfsm.serve") / "static"))
"""The pages, script and style sheet, shipped in the package (no CDN, no build step)."""


class _Stores:
    """The view's stores: one to read (read-only for a SQLite file), one to act through."""

    def __init__(self, store: str | os.PathLike[str] | RunStore) -> None:
        self._url: str | os.PathLike[str] | None = None
        if isinstance(store, (str, os.PathLike)):
            self.reader: RunStore = open_to_read(store)
            if sqlite_path(store) is not None:
                self._url = store  # read-only: actions open the file read-write
        else:
            self.reader = store
        self._writer: RunStore | None = None

    def writer(self) -> RunStore:
        """The store actions save through (a SQLite file: opened read-write when first asked)."""
        if self._writer is None:
            writer = self.reader if self._url is None else open_store(self._url, create=False)
            self._writer = writer
        return self._writer

    def close(self) -> None:
        for store in {id(s): s for s in (self.reader, self._writer) if s is not None}.values():
            store.close()


def default_feed(store: RunStore, poll_interval: float = DEFAULT_INTERVAL) -> ChangeFeed:
    """The feed the view uses for ``store``: LISTEN/NOTIFY for PostgreSQL, else polling.

    Args:
        store: The store the view reads.
        poll_interval: Seconds between two polls of a store that cannot push (SQLite,
            memory).
    """
    postgres = sys.modules.get("agentfsm.stores.postgres")  # imported if store is one
    if postgres is not None and isinstance(store, postgres.PostgresStore):
        from agentfsm.serve.notify_feed import NotifyFeed

        return NotifyFeed(store)
    return PollingFeed(store, poll_interval)


def _sse(name: str, data: JSONValue) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=name)


class _RunStream:
    """One page's view of one run: everything first, then what each change adds."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.events: list[Event] = []

    async def update(self, reset: bool) -> JSONObject | None:
        snapshot = self.store.load(self.run_id)
        if snapshot is None:
            return None
        after = self.events[-1].seq if self.events and not reset else 0
        new = self.store.events(self.run_id, after_seq=after)
        self.events = new if reset else self.events + new
        svg = await run_in_threadpool(diagram_svg, snapshot, list(self.events))
        return {
            "reset": reset,
            "run": run_view(snapshot),
            "events": [event_view(event) for event in new],
            "svg": svg,
        }


def _view_arguments(
    store: object, agent: object, runs: object, feed: object, poll_interval: object
) -> None:
    """Refuse what the view cannot use, before any store is opened."""
    if not isinstance(store, (str, os.PathLike, RunStore)):
        _checks.refuse_type(
            "store", store, "a store URL, a SQLite file's path, or a RunStore (SQLiteStore, …)"
        )
    _checks.callable_or_none("agent", agent)
    if runs is not None and not callable(getattr(runs, "get", None)):
        _checks.refuse_type("runs", runs, "a run driver such as TemporalRuns, or None")
    if feed is not None and not isinstance(feed, ChangeFeed):
        _checks.refuse_type("feed", feed, "a ChangeFeed (PollingFeed, …) or None")
    _checks.seconds("poll_interval", poll_interval)


_NO_ID: JSONObject = {
    "error": "BadRequest",
    "message": "which run? give its id in the path (api/runs/RUN_ID) or as ?id=RUN_ID",
}


def _run_id(request: Request) -> str | None:
    """The run a request names: by its path, or by ``?id=`` (any id, ``..`` included)."""
    run_id = request.path_params.get("run_id") or request.query_params.get("id")
    return str(run_id) if run_id else None


class _LiveView:
    """The app's handlers over one store, one feed and an optional agent factory.

    Args:
        store: A store URL or a SQLite file's path (`agentfsm.serve.stores.open_to_read`),
            or any `RunStore` (used for both reading and acting).
        agent: Builds the application's Agent for a run, for actions that call the model
            and tools (approve, deny, answer); None leaves those refused.
        runs: Drives the runs through their own workers instead (`TemporalRuns`).
        feed: Where live updates come from; by default `default_feed`.
        poll_interval: Seconds between two polls of the default feed.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | RunStore,
        *,
        agent: AgentFactory | None = None,
        runs: RunDriver | None = None,
        feed: ChangeFeed | None = None,
        poll_interval: float = DEFAULT_INTERVAL,
    ) -> None:
        _view_arguments(store, agent, runs, feed, poll_interval)
        self.stores = _Stores(store)
        self.agent = agent
        self.driver = runs
        self.owns_feed = feed is None
        self.feed = feed if feed is not None else default_feed(self.stores.reader, poll_interval)
        self.rows = RunRows(self.stores.reader)

    async def runs_page(self, request: Request) -> Response:
        return FileResponse(STATIC / "runs.html")

    async def run_page(self, request: Request) -> Response:
        return FileResponse(STATIC / "run.html")

    async def old_run_page(self, request: Request) -> Response:
        """``runs/{run_id}`` (the pages' links before ``run?id=``): the same run's page."""
        raw = request.scope.get("raw_path") or request.url.path.encode()
        tail = raw.decode("latin-1").rpartition("/runs/")[2]
        up = "../" * (tail.count("/") + 1)
        run_id = quote(request.path_params["run_id"], safe="")
        return RedirectResponse(f"{up}run?id={run_id}", status_code=308)

    async def runs(self, request: Request) -> Response:
        return JSONResponse({"runs": self.rows.rows(), "states": list(RUN_STATES)})

    async def run(self, request: Request) -> Response:
        run_id = _run_id(request)
        if run_id is None:
            return JSONResponse(_NO_ID, status_code=400)
        stream = _RunStream(self.stores.reader, run_id)
        update = await stream.update(reset=True)
        if update is None:
            return JSONResponse(self._missing(stream.run_id), status_code=404)
        return JSONResponse(update)

    @staticmethod
    def _missing(run_id: str) -> JSONObject:
        return {"error": "NoSuchRun", "message": f"no run {run_id!r} in the store"}

    async def runs_stream(self, request: Request) -> Response:
        async def updates() -> AsyncIterator[ServerSentEvent]:
            seen = self.feed.marks()
            yield _sse("runs", self.rows.rows())
            while True:
                seen = await self.feed.changed(seen)
                yield _sse("runs", self.rows.rows())

        return EventSourceResponse(updates(), ping=15)

    async def run_stream(self, request: Request) -> Response:
        run_id = _run_id(request)
        if run_id is None:
            return JSONResponse(_NO_ID, status_code=400)
        stream = _RunStream(self.stores.reader, run_id)

        async def updates() -> AsyncIterator[ServerSentEvent]:
            seen = self.feed.marks()
            shown = seen.get(stream.run_id)
            yield await self._run_event(stream, reset=True)
            while True:
                seen = await self.feed.changed(seen)
                if seen.get(stream.run_id) != shown:
                    shown = seen.get(stream.run_id)
                    yield await self._run_event(stream, reset=False)

        return EventSourceResponse(updates(), ping=15)

    async def _run_event(self, stream: _RunStream, reset: bool) -> ServerSentEvent:
        update = await stream.update(reset=reset)
        if update is None:
            return _sse("missing", self._missing(stream.run_id))
        return _sse("run", update)

    async def act(self, request: Request) -> Response:
        run_id = _run_id(request)
        if run_id is None:
            return JSONResponse(_NO_ID, status_code=400)
        try:
            try:
                body: JSONValue = await request.json()
            except ValueError as error:
                raise ActionError(400, "BadRequest", f"the body is not JSON ({error})") from error
            action = parse_action(body)
            outcome = await perform(action, run_id, self.stores.writer(), self.agent, self.driver)
        except ActionError as error:
            return JSONResponse(error.as_json(), status_code=error.status)
        return JSONResponse(outcome)


def create_app(
    store: str | os.PathLike[str] | RunStore,
    *,
    agent: AgentFactory | None = None,
    runs: RunDriver | None = None,
    feed: ChangeFeed | None = None,
    poll_interval: float = DEFAULT_INTERVAL,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The live web view of a run store, as an ASGI app (Starlette).

    Args:
        store: Where the runs are: a SQLite file's path or ``sqlite:///PATH`` (read through
            a read-only connection; actions open it read-write), ``postgresql://…`` (opened
            once, never created), ``memory:``, or a `RunStore` to use as it is (a
            `PostgresStore` included).
        agent: ``agent(run_id, store)`` returns the application's `Agent` restored from
            ``store``; needed to approve, deny or answer (the run then calls the model and
            tools). Without it, pause, resume and cancel still work.
        runs: The runs' driver when their own workers run them: with
            `agentfsm.temporal.TemporalRuns`, each action is the update the run's workflow
            takes (its validator refusing what the machine refuses), not a write to the
            store, which the workers own; ``agent`` is then not needed.
        feed: Where live updates come from (default: `default_feed`: a PostgreSQL store's
            notifications, or else a poll of the store every ``poll_interval`` seconds).
        poll_interval: Seconds between two polls of the default feed.
        token: A secret every request must carry (``?token=`` once, which sets a cookie;
            or the header ``Authorization: token …``): `agentfsm.serve.guard`. None (the
            default) asks for none: the application mounting the view authenticates its
            users itself. ``agentfsm ui`` always passes one (unless ``--no-token``).
        allowed_hosts: The names the ``Host`` header may give (None: any), against DNS
            rebinding; ``agentfsm ui`` passes the address it is bound to.

    Whatever the token, an action (a ``POST``) is taken only with a JSON body and, when
    the browser names an ``Origin``, from the view's own origin.

    Returns:
        The app; serve it with uvicorn or mount it in your own Starlette or FastAPI app.

    Raises:
        StoreURLError: ``store`` is a URL of no store agentfsm knows.
        StoreError: There is no store there (nothing is created), or it is not a run
            store; a password in the URL is never shown.
        TypeError: An argument of the wrong kind (a ``store`` that is neither a URL, a
            path nor a `RunStore`; an ``agent`` that is not callable; a ``runs`` without
            ``get``; a ``feed`` that is no `ChangeFeed`; a ``poll_interval`` not a number).
        ValueError: A ``poll_interval`` not > 0, or an empty ``token``.
    """
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError(f"token must be a non-empty string or None, not {token!r}")
    hosts = None if allowed_hosts is None else [str(host) for host in allowed_hosts]
    view = _LiveView(store, agent=agent, runs=runs, feed=feed, poll_interval=poll_interval)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        close = getattr(view.feed, "aclose", None)
        if view.owns_feed and close is not None:
            await close()
        view.stores.close()

    routes = [
        Route("/", view.runs_page),
        Route("/run", view.run_page),
        Route("/runs/{run_id:path}", view.old_run_page),
        Route("/api/runs", view.runs),
        Route("/api/run", view.run),
        Route("/api/run/actions", view.act, methods=["POST"]),
        Route("/api/stream/run", view.run_stream),
        Route("/api/runs/{run_id:path}/actions", view.act, methods=["POST"]),
        Route("/api/runs/{run_id:path}", view.run),
        Route("/api/stream/runs", view.runs_stream),
        Route("/api/stream/runs/{run_id:path}", view.run_stream),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    guard = Middleware(Guard, token=token, hosts=hosts)
    app = _HeadedApp(routes=routes, lifespan=lifespan, middleware=[guard])
    app.state.view = view
    return app


class _HeadedApp(Starlette):
    """The view's Starlette app, with `SecurityHeaders` outside everything else.

    A user middleware sits inside Starlette's own error handler, whose 500 page would then
    go out without the headers; this one wraps the whole stack, that page and a refusal of
    the `Guard` included.
    """

    def build_middleware_stack(self) -> ASGIApp:
        """Starlette's stack (its error handler outermost), inside `SecurityHeaders`."""
        return SecurityHeaders(super().build_middleware_stack())
