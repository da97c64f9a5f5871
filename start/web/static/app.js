// start board serve: the page. No library, no build step. Every text from the board or the
// history is set as text (textContent); only Markdown the server rendered with HTML escaped
// (start.web.markdown) is set as HTML, and the page's CSP lets nothing inline run either way.
"use strict";

const STATUSES = ["pending", "in_progress", "completed", "failed"];
const NAMES = { pending: "Pending", in_progress: "In progress", completed: "Completed", failed: "Failed" };
const main = () => document.getElementById("main");

// --- small helpers ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Markdown the server rendered: HTML escaped there, links without referrer, images as links.
function rendered(html) {
  const box = el("div", { class: "rendered" });
  box.innerHTML = html;
  return box;
}

async function api(path, body) {
  const init = { credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const answer = await fetch(path, init);
  let data = null;
  try { data = await answer.json(); } catch (e) { data = null; }
  if (!answer.ok) {
    const error = new Error(data && data.error ? data.error : `${answer.status} ${answer.statusText}`);
    error.exit = data && data.exit;
    throw error;
  }
  return data;
}

function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.hidden = !text;
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return isNaN(date) ? iso : date.toLocaleString();
}

function elapsed(since) {
  const seconds = Math.max(0, Math.floor((Date.now() - new Date(since).getTime()) / 1000));
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  const two = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query || "") };
}

function filterQuery(query) {
  const out = new URLSearchParams();
  for (const key of ["q", "label", "holder", "archived"]) {
    const value = query.get(key);
    if (value) out.set(key, value);
  }
  return out;
}

// --- the board -------------------------------------------------------------------------------

function card(item) {
  const chips = (item.labels || []).map((label) => el("span", { class: "chip" }, label));
  const meta = [];
  if (item.assignee) meta.push(el("span", {}, (item.status === "in_progress" ? "held by " : "by ") + item.assignee));
  if (item.parent) meta.push(el("span", {}, " · part of ", el("a", { href: `#/item/${encodeURIComponent(item.parent)}` }, item.parent)));
  if (item.children) meta.push(el("span", {}, ` · ${item.children_done}/${item.children} done`));
  if (item.runs) meta.push(el("span", {}, " · runs"));
  if (item.confirmed === false) meta.push(el("span", { class: "warning" }, " · unconfirmed"));
  const waits = (item.waits_on || []).length
    ? el("div", { class: "meta waits" }, "waits on ", ...item.waits_on.flatMap((id, i) => [i ? ", " : "", el("a", { href: `#/item/${encodeURIComponent(id)}` }, id)]))
    : null;
  return el("article", { class: `card ${item.status}`, "data-id": item.id },
    el("div", { class: "top" }, el("span", { class: "id" }, item.id), el("span", {}, `P${item.priority}`), item.archived ? el("span", {}, "archived") : null),
    el("a", { class: "title", href: `#/item/${encodeURIComponent(item.id)}` }, item.title),
    chips.length ? el("div", {}, chips) : null,
    meta.length ? el("div", { class: "meta" }, meta) : null,
    waits);
}

function filterBar(query, target) {
  const input = (name, placeholder) => el("input", { name, placeholder, value: query.get(name) || "", "aria-label": placeholder });
  const archived = el("select", { name: "archived", "aria-label": "archived" },
    el("option", { value: "" }, "not archived"), el("option", { value: "also" }, "archived too"), el("option", { value: "only" }, "archived only"));
  archived.value = query.get("archived") || "";
  const old = main().querySelector("#filters");
  if (old && old.dataset.target === target) return old;  // what the person is typing stays
  return el("form", { class: "bar", id: "filters", "data-target": target, onsubmit: (event) => {
      event.preventDefault();
      const data = new FormData(event.target);
      const out = new URLSearchParams();
      for (const [key, value] of data.entries()) if (String(value).trim()) out.set(key, String(value).trim());
      location.hash = `#/${target}${out.toString() ? "?" + out : ""}`;
    } },
    input("q", "search words"), input("label", "label"), input("holder", "holder"), archived,
    el("button", { type: "submit" }, "Filter"));
}

function addForm() {
  const error = el("p", { class: "error", id: "add-error", role: "alert" });
  const priority = el("select", { name: "priority", "aria-label": "priority" },
    [0, 1, 2, 3, 4].map((p) => el("option", { value: p }, `P${p}`)));
  priority.value = "2";
  const form = el("form", { id: "add", onsubmit: async (event) => {
      event.preventDefault();
      const data = new FormData(event.target);
      const list = (name) => String(data.get(name) || "").split(",").map((s) => s.trim()).filter(Boolean);
      const body = { title: String(data.get("title") || ""), description: String(data.get("description") || ""),
        priority: Number(data.get("priority")), labels: list("labels"), after: list("after") };
      if (String(data.get("parent") || "").trim()) body.parent = String(data.get("parent")).trim();
      try {
        const item = await api("/api/items", body);
        error.textContent = "";
        event.target.reset();
        priority.value = "2";
        location.hash = `#/item/${encodeURIComponent(item.id)}`;
      } catch (e) { error.textContent = e.message; }
    } },
    el("input", { name: "title", placeholder: "title", required: true, "aria-label": "title" }),
    el("textarea", { name: "description", placeholder: "description (Markdown)", "aria-label": "description" }),
    el("div", { class: "bar" }, priority,
      el("input", { name: "labels", placeholder: "labels, comma separated", "aria-label": "labels" }),
      el("input", { name: "parent", placeholder: "part of (item id)", "aria-label": "parent" }),
      el("input", { name: "after", placeholder: "waits on (ids, comma separated)", "aria-label": "after" })),
    el("div", {}, el("button", { type: "submit" }, "Add item")), error);
  return el("details", { class: "add" }, el("summary", {}, "Add an item"), form);
}

const view = { loaded: {} };  // how many items each column shows: kept across live updates

async function showBoard(query) {
  const filters = filterQuery(query);
  const data = await api(`/api/board?${filters}`);
  const root = document.getElementById("root");
  root.textContent = data.root.replace(/\/+$/, "").split("/").pop() || data.root;  // the project's name
  root.title = data.root;
  const columns = await Promise.all(data.columns.map(async (column) => {
    // Live updates keep the pages the person asked for: read them again.
    let shown = column;
    const wanted = view.loaded[column.status] || 0;
    while (shown.next && shown.items.length < wanted) {
      const next = await api(`/api/column/${column.status}?${filters}&after=${encodeURIComponent(shown.next)}`);
      shown = { ...next, items: shown.items.concat(next.items) };
    }
    return shown;
  }));
  const page = el("div", { id: "board" });
  if (!route().parts.length) {
    const open = main().querySelector("details.add");
    const keep = open && open.open ? open : addForm();
    page.append(filterBar(query, ""), keep);
  }
  page.append(runningPanel(data.running));
  const grid = el("div", { class: "columns" });
  for (const column of columns) {
    const list = el("div", { class: "items" }, column.items.map(card));
    const box = el("section", { class: "column", id: `column-${column.status}`, "data-status": column.status },
      el("h2", { class: `status-${column.status}` }, NAMES[column.status], " ", el("span", { class: "count" }, `(${column.total})`)),
      list);
    let next = column.next;
    if (next) {
      const more = el("button", { class: "more", type: "button", onclick: async () => {
          const page_ = await api(`/api/column/${column.status}?${filters}&after=${encodeURIComponent(next)}`);
          page_.items.forEach((item) => list.append(card(item)));
          view.loaded[column.status] = list.children.length;
          next = page_.next;
          if (!next) more.remove();
          else more.textContent = `More (${column.total - list.children.length} left)`;
        } }, `More (${column.total - column.items.length} left)`);
      box.append(more);
    }
    grid.append(box);
  }
  page.append(grid);
  return page;
}

function runningPanel(items) {
  if (!items.length) return el("section", { class: "running", id: "running" }, el("h2", {}, "In progress"), el("p", { class: "dim" }, "Nothing is in progress."));
  return el("section", { class: "running", id: "running" }, el("h2", {}, `In progress (${items.length})`),
    el("ul", {}, items.map((item) => el("li", { "data-id": item.id },
      el("a", { href: `#/item/${encodeURIComponent(item.id)}` }, item.id), " ", item.title, " · ", item.assignee || "", " · ",
      el("span", { class: "elapsed", "data-since": item.since }, elapsed(item.since))))));
}

// --- the graph of dependencies ------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

async function showGraph(query) {
  const filters = filterQuery(query);
  const data = await api(`/api/graph?${filters}`);
  const page = el("div", { id: "graph" }, filterBar(query, "graph"));
  const told = data.total > data.nodes.length ? ` (the first ${data.nodes.length} of ${data.total}, highest priority first)` : "";
  page.append(el("p", { class: "dim" }, `Unfinished items, each right of what it waits on${told}.`));
  if (!data.nodes.length) { page.append(el("p", {}, "No unfinished item matches.")); return page; }
  // Layers: each item one right of the deepest item it waits on (cycles cannot be: the board refuses them).
  const into = new Map(data.nodes.map((n) => [n.id, []]));
  for (const edge of data.edges) into.get(edge.to).push(edge.from);
  const layer = new Map();
  const depth = (id, seen = new Set()) => {
    if (layer.has(id)) return layer.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const found = into.get(id).reduce((most, from) => Math.max(most, depth(from, seen) + 1), 0);
    layer.set(id, found);
    return found;
  };
  data.nodes.forEach((n) => depth(n.id));
  // An item nothing waits before sits just left of the first item that waits on it, so that
  // its arrows cross no column of boxes.
  const out = new Map(data.nodes.map((n) => [n.id, []]));
  for (const edge of data.edges) out.get(edge.from).push(edge.to);
  for (const node of data.nodes) {
    const next = out.get(node.id).map((id) => layer.get(id));
    if (!into.get(node.id).length && next.length) layer.set(node.id, Math.min(...next) - 1);
  }
  // Within a column, each item near the items it waits on (the mean of their rows).
  const layers = [];
  for (const node of data.nodes) (layers[layer.get(node.id)] ||= []).push(node);
  const row = new Map();
  layers.forEach((nodes) => {
    const mean = (node) => {
      const rows = into.get(node.id).map((id) => row.get(id)).filter((r) => r !== undefined);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
    };
    nodes.sort((a, b) => mean(a) - mean(b));
    nodes.forEach((node, index) => row.set(node.id, index));
  });
  const W = 200, H = 44, GX = 70, GY = 16;
  const place = new Map();
  layers.forEach((nodes, x) => nodes.forEach((node, y) => place.set(node.id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + layers.length * (W + GX), height = 20 + Math.max(...layers.map((l) => l.length)) * (H + GY);
  const drawing = svg("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "dependencies" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, svg("path", { d: "M0,0 L10,5 L0,10 z" }))));
  for (const edge of data.edges) {
    const a = place.get(edge.from), b = place.get(edge.to);
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mid = (x1 + x2) / 2;
    drawing.append(svg("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)", "data-from": edge.from, "data-to": edge.to }));
  }
  for (const node of data.nodes) {
    const { x, y } = place.get(node.id);
    const title = node.title.length > 28 ? node.title.slice(0, 27) + "…" : node.title;
    const link = svg("a", { href: `#/item/${encodeURIComponent(node.id)}` },
      svg("rect", { x, y, width: W, height: H, rx: 4 }),
      svg("text", { x: x + 8, y: y + 16, class: "id" }, `${node.id} · ${node.status}${node.assignee ? " · " + node.assignee : ""}`),
      svg("text", { x: x + 8, y: y + 33 }, title),
      svg("title", {}, node.title));
    drawing.append(svg("g", { class: node.status, "data-id": node.id }, link));
  }
  page.append(drawing);
  return page;
}

// --- an item ---------------------------------------------------------------------------------

function fields(rows) {
  return el("dl", { class: "fields" }, rows.filter(([, v]) => v !== null && v !== undefined && v !== "").flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function runFields(run) {
  const usage = [run.input_tokens != null ? `${run.input_tokens} in` : null, run.output_tokens != null ? `${run.output_tokens} out` : null,
    run.cost_usd != null ? `$${Number(run.cost_usd).toFixed(4)}` : null].filter(Boolean).join(", ");
  return fields([
    ["run", el("a", { href: `#/run/${run.id}` }, `${run.id}`)], ["time", when(run.time)], ["what", run.task ? `task ${run.task}` : run.mode],
    ["agent", run.agent], ["model", run.model], ["permissions", run.permissions], ["state", run.state],
    ["exit", run.exit_code != null ? String(run.exit_code) : null], ["duration", run.duration != null ? `${Number(run.duration).toFixed(1)} s` : null],
    ["usage", usage]]);
}

function actionForms(item) {
  const offers = new Set(item.offers);
  const error = el("p", { class: "error", id: "action-error", role: "alert" });
  const box = el("section", { class: "actions", id: "actions" }, el("h2", {}, "Change it"));
  const send = (action, body, done) => async (event) => {
    if (event) event.preventDefault();
    try {
      const answer = await api(`/api/items/${encodeURIComponent(item.id)}/${action}`, typeof body === "function" ? body() : body);
      error.textContent = answer.warning ? answer.warning : "";
      box.dataset.dirty = "";
      if (done) done();
      refresh();
    } catch (e) { error.textContent = e.message; }
  };
  const dirty = () => { box.dataset.dirty = "1"; };
  if (offers.has("edit")) {
    const title = el("input", { name: "title", value: item.title, "aria-label": "title", oninput: dirty });
    const description = el("textarea", { name: "description", "aria-label": "description", oninput: dirty });
    description.value = item.description;
    const priority = el("select", { name: "priority", "aria-label": "priority", onchange: dirty }, [0, 1, 2, 3, 4].map((p) => el("option", { value: p }, `P${p}`)));
    priority.value = String(item.priority);
    const labels = el("input", { name: "labels", value: (item.labels || []).join(", "), "aria-label": "labels", oninput: dirty });
    const parent = el("input", { name: "parent", value: item.parent || "", placeholder: "part of (item id)", "aria-label": "parent", oninput: dirty });
    box.append(el("form", { class: "wide", id: "edit", onsubmit: send("edit", () => {
        const now = labels.value.split(",").map((s) => s.trim()).filter(Boolean);
        const body = {};
        if (title.value !== item.title) body.title = title.value;
        if (description.value !== item.description) body.description = description.value;
        if (Number(priority.value) !== item.priority) body.priority = Number(priority.value);
        const added = now.filter((l) => !item.labels.includes(l)), removed = item.labels.filter((l) => !now.includes(l));
        if (added.length) body.add_labels = added;
        if (removed.length) body.remove_labels = removed;
        if (parent.value.trim() !== (item.parent || "")) body.parent = parent.value.trim();
        return body;
      }) }, title, description, el("div", { class: "bar" }, priority, labels, parent), el("div", {}, el("button", { type: "submit" }, "Save"))));
  }
  if (offers.has("comment")) {
    const text = el("textarea", { name: "text", placeholder: "a comment (Markdown)", "aria-label": "comment", oninput: dirty });
    box.append(el("form", { class: "wide", id: "comment", onsubmit: send("comment", () => ({ text: text.value }), () => { text.value = ""; }) },
      text, el("div", {}, el("button", { type: "submit" }, "Comment"))));
  }
  if (offers.has("reassign")) {
    const to = el("input", { name: "to", placeholder: "name", required: true, "aria-label": "reassign to", oninput: dirty });
    box.append(el("form", { id: "reassign", onsubmit: send("reassign", () => ({ to: to.value.trim() })) }, "Give it to", to, el("button", { type: "submit" }, "Reassign")));
  }
  const buttons = el("div", { class: "bar" });
  for (const [action, label] of [["reopen", "Reopen"], ["archive", "Archive"], ["unarchive", "Unarchive"]]) {
    if (offers.has(action)) buttons.append(el("button", { type: "button", id: action, onclick: send(action, {}) }, label));
  }
  if (buttons.children.length) box.append(buttons);
  box.append(error);
  return box;
}

async function showItem(id) {
  const item = await api(`/api/items/${encodeURIComponent(id)}`);
  const status = item.status + (item.assignee ? (item.status === "in_progress" ? `, held by ${item.assignee}` : `, by ${item.assignee}`) : "") + ` (epoch ${item.epoch})`;
  const waits = item.blocked_by.length ? el("span", {}, ...item.blocked_by.flatMap((dep, i) => [i ? ", " : "",
    el("a", { href: `#/item/${encodeURIComponent(dep)}` }, dep), ` (${item.statuses[dep] || "missing"})`])) : null;
  const page = el("div", { id: "item", "data-id": item.id, "data-status": item.status },
    el("h2", {}, el("span", { class: "dim" }, item.id), " ", el("span", { id: "item-title" }, item.title)),
    fields([["status", el("span", { id: "item-status", class: `status-${item.status}` }, status)], ["priority", `P${item.priority}`],
      ["labels", item.labels.join(", ")], ["part of", item.parent ? el("a", { href: `#/item/${encodeURIComponent(item.parent)}` }, item.parent) : null],
      ["waits on", waits], ["why it waits", item.blocked.join("; ")], ["created", `${when(item.created)} by ${item.created_by}`],
      ["runs", item.run ? (item.run.task ? `task ${item.run.task}` : "a prompt") + (item.run.agents && item.run.agents.length ? ` with ${item.run.agents.join(", ")}` : "") : null],
      ["shaped", item.level !== "full" ? `at '${item.level}' by ${item.level_by}: it runs at that at most` : null],
      ["archived", item.archived ? when(item.archived) : null], ["reason", item.reason]]));
  if (item.description) page.append(el("h3", {}, "Description"), rendered(item.description_html));
  if (item.answer_html) page.append(el("h3", {}, "Answer"), el("div", { id: "answer" }, rendered(item.answer_html)));
  if (item.record) page.append(el("h3", {}, "The run behind it"), runFields(item.record));
  if (item.child_items.length) page.append(el("h3", {}, "Children"), el("div", {}, item.child_items.map(card)));
  if (item.comments.length) {
    page.append(el("h3", {}, "Comments"), el("div", { id: "comments" }, item.comments.map((note) =>
      el("div", { class: "comment" }, el("div", { class: "who" }, `${when(note.at)} · ${note.author}`), rendered(note.html)))));
  }
  // A form the person is typing in (or in) stays as it is, and where it is.
  const old = main().querySelector("#actions");
  const busy = old && (old.dataset.dirty === "1" || old.contains(document.activeElement));
  const keep = busy && main().querySelector(`#item[data-id="${CSS.escape(item.id)}"]`);
  page.append(keep ? old : actionForms(item));
  page.append(el("h3", {}, "History"), el("table", { id: "events" }, el("tbody", {}, item.events.map((event) =>
    el("tr", {}, el("td", {}, when(event.at)), el("td", {}, event.actor), el("td", {}, event.op),
      el("td", {}, Object.entries(event.detail).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ")))))));
  return page;
}

// --- the history -----------------------------------------------------------------------------

function runRow(run) {
  return el("tr", { "data-run": run.id },
    el("td", {}, el("a", { href: `#/run/${run.id}` }, String(run.id))), el("td", {}, when(run.time)),
    el("td", {}, run.task ? `task ${run.task}` : run.mode), el("td", {}, run.agent + (run.model ? ` (${run.model})` : "")),
    el("td", {}, run.state), el("td", {}, run.duration != null ? `${Number(run.duration).toFixed(1)} s` : ""),
    el("td", {}, run.cost_usd != null ? `$${Number(run.cost_usd).toFixed(4)}` : ""));
}

async function showRuns(query) {
  const search = query.get("q") || "";
  const data = await api(`/api/runs?${search ? "q=" + encodeURIComponent(search) : ""}`);
  const form = el("form", { class: "bar", onsubmit: (event) => {
      event.preventDefault();
      const q = new FormData(event.target).get("q");
      location.hash = `#/runs${q ? "?q=" + encodeURIComponent(q) : ""}`;
    } }, el("input", { name: "q", placeholder: "search prompts and answers", value: search, "aria-label": "search runs" }), el("button", { type: "submit" }, "Search"));
  const body = el("tbody", {}, data.runs.map(runRow));
  const page = el("div", { id: "runs" }, form, el("table", {},
    el("thead", {}, el("tr", {}, ["run", "time", "what", "agent", "state", "took", "cost"].map((h) => el("th", {}, h)))), body));
  if (!data.runs.length) page.append(el("p", { class: "dim" }, search ? "No run matches." : "No run of this project is recorded."));
  let next = data.next;
  if (next) {
    const more = el("button", { class: "more", type: "button", onclick: async () => {
        const page_ = await api(`/api/runs?before=${next}${search ? "&q=" + encodeURIComponent(search) : ""}`);
        page_.runs.forEach((run) => body.append(runRow(run)));
        next = page_.next;
        if (!next) more.remove();
      } }, "More");
    page.append(more);
  }
  return page;
}

async function showRun(id) {
  const run = await api(`/api/runs/${encodeURIComponent(id)}`);
  const page = el("div", { id: "run", "data-run": run.id }, el("h2", {}, `Run ${run.id}`), runFields(run));
  if (run.error) page.append(el("h3", {}, "Error"), el("pre", { class: "text" }, run.error));
  if (run.instructions) page.append(el("h3", {}, "Instructions"), el("pre", { class: "text" }, run.instructions));
  page.append(el("h3", {}, "Prompt"), el("pre", { class: "text", id: "prompt" }, run.prompt || ""));
  if (run.answer_html) page.append(el("h3", {}, "Answer"), el("div", { id: "answer" }, rendered(run.answer_html)));
  return page;
}

// --- routing and live updates ------------------------------------------------------------------

let busy = false, again = false, lastRoute = "";

async function refresh() {
  if (busy) { again = true; return; }
  busy = true;
  try {
    do {
      again = false;
      const { parts, query } = route();
      const here = location.hash;
      if (here !== lastRoute) view.loaded = {};
      lastRoute = here;
      let page;
      if (!parts.length) page = await showBoard(query);
      else if (parts[0] === "graph") page = await showGraph(query);
      else if (parts[0] === "item" && parts[1]) page = await showItem(parts[1]);
      else if (parts[0] === "runs") page = await showRuns(query);
      else if (parts[0] === "run" && parts[1]) page = await showRun(parts[1]);
      else page = el("p", {}, "No such page: ", el("a", { href: "#/" }, "the board"));
      if (location.hash !== here) { again = true; continue; }
      // A field kept across the update (a form being filled in) keeps the focus and the caret.
      const active = document.activeElement;
      const caret = active && "selectionStart" in active ? [active.selectionStart, active.selectionEnd] : null;
      main().replaceChildren(page);
      if (active && active !== document.body && document.contains(active) && document.activeElement !== active) {
        active.focus();
        try { if (caret && caret[0] !== null) active.setSelectionRange(caret[0], caret[1]); } catch (e) { /* no caret here */ }
      }
      for (const [name, on] of [["nav-board", !parts.length], ["nav-graph", parts[0] === "graph"], ["nav-runs", parts[0] === "runs" || parts[0] === "run"]]) {
        document.getElementById(name).classList.toggle("here", on);
      }
      notice("");
    } while (again);
  } catch (e) {
    notice(e.message);
  } finally {
    busy = false;
  }
}

function live() {
  const badge = document.getElementById("live");
  const source = new EventSource("/api/events");
  source.addEventListener("hello", () => { badge.textContent = "live"; badge.className = "on"; refresh(); });
  source.addEventListener("change", () => refresh());
  source.onerror = () => { badge.textContent = "reconnecting"; badge.className = "offline"; };
}

setInterval(() => {
  for (const node of document.querySelectorAll(".elapsed[data-since]")) node.textContent = elapsed(node.dataset.since);
}, 1000);
window.addEventListener("hashchange", refresh);
live();
refresh();
