// A run's page: its diagram, status, conversation, event log and the operator's actions,
// all redrawn from the SSE stream as each event lands in the store.
"use strict";

// The run's id is the query's (run?id=…): a path segment could not hold "." or "..".
const runId = new URLSearchParams(location.search).get("id") || "";
const query = "?id=" + encodeURIComponent(runId);
let run = null;
let missing = false;

document.getElementById("run-id").textContent = runId;
document.title = "agentfsm run " + runId;

function showError(error) {
  const box = document.getElementById("error");
  box.hidden = !error;
  box.replaceChildren();
  if (error) box.append(el("b", {class: "kind", text: error.error}), ": ", error.message);
}

// The SVG comes from Graphviz on the server; scripts and handlers are dropped all the same.
function showDiagram(svgText) {
  const parsed = new DOMParser().parseFromString(svgText, "image/svg+xml").documentElement;
  for (const bad of parsed.querySelectorAll("script, foreignObject")) bad.remove();
  for (const node of parsed.querySelectorAll("*")) {
    for (const attr of [...node.attributes]) {
      if (attr.name.startsWith("on")) node.removeAttribute(attr.name);
    }
  }
  const svg = document.importNode(parsed, true);
  // Shrunk to fit, but never so far that a label is under 9 px (9.2: room for rounding);
  // wider than the page, #diagram scrolls.
  const box = svg.viewBox && svg.viewBox.baseVal;
  const fonts = [...svg.querySelectorAll("text")].map(t => parseFloat(t.getAttribute("font-size")) || 14);
  if (box && box.width && fonts.length) {
    svg.style.minWidth = Math.min(box.width * 4 / 3, box.width * 9.2 / Math.min(...fonts)) + "px";
  }
  document.getElementById("diagram").replaceChildren(svg);
}

function showStatus(view) {
  const state = document.getElementById("state");
  state.textContent = view.state;
  state.className = "badge state-" + view.state;
  document.getElementById("loop-state").textContent = view.loop_state || "—";
  document.getElementById("turn").textContent = view.turn + (view.max_turns ? " of " + view.max_turns : "");
  document.getElementById("iteration").textContent = view.iteration + " of " + view.max_iterations;
  document.getElementById("reason").textContent = view.reason ? "reason " + view.reason : "";
  const paused = view.paused_from ? " · paused from " + view.paused_from : "";
  document.getElementById("version").textContent = "version " + view.version + " · seq " + view.seq + paused;
}

function callText(call) {
  return call.name + "(" + call.arguments + ")";
}

function showMessage(message) {
  const item = el("li", {class: "msg role-" + message.role}, el("span", {class: "role", text: message.role}));
  if (message.role === "tool") item.append(el("span", {class: "muted", text: " " + (message.name || "") + " ← " + message.tool_call_id}));
  if (message.content !== null) item.append(el("pre", {text: message.content}));
  for (const call of message.tool_calls) {
    item.append(el("div", {class: "call"}, "calls ", el("code", {text: callText(call)}), el("span", {class: "muted", text: " " + call.id})));
  }
  return item;
}

// Only what the run's state allows (the table's events from it); nothing for no run.
function showActions(view) {
  const allowed = new Set(view ? view.allowed : []);
  const pending = view ? view.pending : [];
  const decisions = document.getElementById("decisions");
  decisions.hidden = !(allowed.has("resolve_action") && pending.length);
  document.getElementById("pending").replaceChildren(...pending.map((call) => el("li", {},
    el("code", {text: callText(call)}), " ",
    el("select", {"data-call": call.id, "aria-label": "decision for " + call.id},
      el("option", {value: "approve", text: "approve"}), el("option", {value: "deny", text: "deny"})),
  )));
  const answer = document.getElementById("answer");
  answer.hidden = !allowed.has("provide_input");
  document.getElementById("question").textContent = (view && view.question) || "";
  // While busy, the process running the turn owns the run: the view offers nothing.
  const idle = view !== null && view.state !== "busy";
  for (const button of document.querySelectorAll("button[data-event]")) {
    button.hidden = !(idle && allowed.has(button.dataset.event));
  }
}

// A record of content for the user shows that content (content.js); any other event, its data
// as JSON, cut short.
function eventRow(event) {
  const move = event.transition ? event.source + (event.source === event.target ? " ↺" : " → " + event.target) : "";
  const shown = !event.transition && event.event === "user_content";
  const data = shown ? null : JSON.stringify(event.data);
  return el("tr", {"data-seq": String(event.seq), "data-event": event.event, class: shown ? "record shown" : event.transition ? "" : "record"},
    el("td", {text: String(event.seq)}), el("td", {text: when(event.at)}),
    el("td", {text: event.machine}), el("td", {text: event.event}), el("td", {text: move}),
    shown ? userContent(event.data)
      : el("td", {class: "data", title: data, text: shorten(data, 120)}));
}

// No such run (yet): say so, offer nothing, and show the page is waiting, not live.
function showMissing(error) {
  missing = true;
  run = null;
  showError(error);
  showActions(null);
  for (const part of document.querySelectorAll(".of-a-run")) part.hidden = true;
  const badge = document.getElementById("live");
  badge.textContent = "no such run";
  badge.className = "live off";
}

function show(update) {
  if (missing) {
    missing = false;
    showError(null);
    for (const part of document.querySelectorAll(".of-a-run")) part.hidden = false;
    const badge = document.getElementById("live");
    badge.textContent = "live";
    badge.className = "live on";
  }
  run = update.run;
  showStatus(run);
  showActions(run);
  showDiagram(update.svg);
  document.getElementById("conversation").replaceChildren(...run.messages.map(showMessage));
  const body = document.querySelector("#events tbody");
  if (update.reset) body.replaceChildren();
  body.append(...update.events.map(eventRow));
}

async function act(body) {
  body.version = run ? run.version : null;
  const answer = await fetch("api/run/actions" + query, {
    method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body),
  });
  const data = await answer.json();
  showError(answer.ok ? null : data);
  return answer.ok;
}

document.getElementById("decisions").addEventListener("submit", async (event) => {
  event.preventDefault();
  const decisions = {};
  for (const select of document.querySelectorAll("#pending select")) decisions[select.dataset.call] = select.value;
  await act({action: "resolve", decisions});
});
document.getElementById("answer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("answer-text");
  if (await act({action: "answer", text: input.value})) input.value = "";
});
for (const button of document.querySelectorAll("button[data-action]")) {
  button.addEventListener("click", () => act({action: button.dataset.action}));
}

live("api/stream/run" + query, {
  run: show,
  missing: showMissing,
}, () => missing);
