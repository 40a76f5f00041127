// Shared by both pages. Every stored string goes into the page as text (textContent or a
// text node), never as markup, so whatever a message holds is shown, not run.
"use strict";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

function when(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// An EventSource that shows whether the page is live, and reconnects as browsers do;
// quiet() true keeps the badge as the page set it (a run that is not there is not live).
function live(url, handlers, quiet) {
  const badge = document.getElementById("live");
  const source = new EventSource(url);
  source.onopen = () => {
    if (quiet && quiet()) return;
    badge.textContent = "live"; badge.className = "live on";
  };
  source.onerror = () => { badge.textContent = "reconnecting…"; badge.className = "live off"; };
  for (const [name, handler] of Object.entries(handlers)) {
    source.addEventListener(name, (message) => handler(JSON.parse(message.data)));
  }
  return source;
}
