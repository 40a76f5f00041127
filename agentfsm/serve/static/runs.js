// The runs page: every run of the store, filterable by state, updated live over SSE.
"use strict";

const filter = document.getElementById("state-filter");
const params = new URLSearchParams(location.search);
let rows = [];

function render() {
  const wanted = filter.value;
  const body = document.querySelector("#runs tbody");
  const shown = rows.filter((run) => !wanted || run.state === wanted);
  body.replaceChildren(...shown.map((run) => el("tr", {"data-run": run.run_id, "data-state": run.state},
    el("td", {}, el("a", {href: "run?id=" + encodeURIComponent(run.run_id), text: run.run_id})),
    el("td", {}, el("span", {class: "badge state-" + run.state, text: run.state})),
    el("td", {text: run.reason || ""}),
    el("td", {text: String(run.turn)}),
    el("td", {text: when(run.last_event_at)}),
  )));
  document.getElementById("empty").hidden = rows.length > 0;
}

async function start() {
  const answer = await fetch("api/runs");
  const data = await answer.json();
  for (const state of data.states) filter.append(el("option", {value: state, text: state}));
  filter.value = params.get("state") || "";
  rows = data.runs;
  render();
  filter.addEventListener("change", () => {
    const query = filter.value ? "?state=" + encodeURIComponent(filter.value) : "";
    history.replaceState(null, "", location.pathname + query);
    render();
  });
  live("api/stream/runs", {runs: (data) => { rows = data; render(); }});
}

start();
