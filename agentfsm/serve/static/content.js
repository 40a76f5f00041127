// A tool's content for the user (a `user_content` record: {call_id, name, content: [parts]}),
// shown as the user should see it: text as text, a raster image as an <img>, anything else
// as a placeholder naming its media type and size. The parts were written by tools (an MCP
// server, say), so nothing of them is trusted: no markup is built from them, an image's
// data URL takes its media type from RASTER (never from the part) and only checked base64,
// and a URI is shown as text, never as a link.
"use strict";

// The image types a browser draws without running anything; SVG is not one of them.
const RASTER = new Map([["image/png", "PNG"], ["image/jpeg", "JPEG"], ["image/gif", "GIF"], ["image/webp", "WebP"]]);
// (A plain class and a length check: a regex with a repeated group overflows the stack on
// a string of megabytes.)
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// Bigger images (as base64 characters: about 6 MB decoded) are named, not drawn.
const MAX_INLINE = 8 * 1024 * 1024;

// "image/PNG ; charset=x" → "image/png"; anything not a string → "".
function mediaType(value) {
  return typeof value === "string" ? value.split(";")[0].trim().toLowerCase() : "";
}

function byteSize(data) {
  if (typeof data !== "string") return 0;
  return Math.floor(data.length * 3 / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
}

function sizeText(bytes) {
  if (bytes < 1024) return bytes + " bytes";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
  return (bytes / 1024 / 1024).toFixed(1) + " MB";
}

function shorten(text, limit) {
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}

function placeholder(kind, label, why) {
  return el("div", {class: "part placeholder", "data-kind": kind},
    el("b", {text: "[" + kind + "] "}), el("code", {text: shorten(label, 120)}),
    el("span", {class: "muted", text: " " + why}));
}

// One part: a node that shows it, and never a node that could run or load anything else.
function contentPart(part) {
  if (part === null || typeof part !== "object") return placeholder("?", String(part), "not a content part");
  if (part.type === "text") return el("pre", {class: "part text", text: String(part.text ?? "")});
  const kind = typeof part.type === "string" ? part.type : "?";
  const given = typeof part.mime_type === "string" ? part.mime_type : "no media type";
  const data = typeof part.data === "string" ? part.data : "";
  const where = typeof part.uri === "string" ? " from " + shorten(part.uri, 200) : "";
  const size = sizeText(byteSize(data));
  if (!data) return placeholder(kind, given, "(no data)" + where);
  const type = mediaType(part.mime_type);
  const raster = RASTER.get(type);
  if (kind === "audio" || raster === undefined) return placeholder(kind, given, size + " · not shown inline" + where);
  if (data.length > MAX_INLINE) return placeholder(kind, given, size + " · too large to show inline" + where);
  if (data.length % 4 !== 0 || !BASE64.test(data)) return placeholder(kind, given, "(its data is not base64)" + where);
  const image = el("img", {class: "part image", alt: raster + " image, " + size + where, title: given + ", " + size + where});
  image.src = "data:" + type + ";base64," + data;  // type: one of RASTER's keys
  return image;
}

// The data cell of a user_content row: which call it came from, then its parts.
function userContent(data) {
  const record = data !== null && typeof data === "object" ? data : {};
  const parts = Array.isArray(record.content) ? record.content : [];
  const from = typeof record.name === "string" ? record.name : "?";
  const call = typeof record.call_id === "string" ? record.call_id : "";
  return el("td", {class: "user-content"},
    el("div", {class: "shown-by"}, "shown to the user by ", el("code", {text: from}), el("span", {class: "muted", text: " " + call})),
    ...parts.map(contentPart));
}
