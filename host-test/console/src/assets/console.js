// toolseal console page. Every string from the fleet (server ids, tool names, descriptions,
// reasons, findings, errors) is written with text nodes: nothing here parses HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="toolseal-console-token"]').content;
const POLL_MS = 1500;
// Fields of the admin server view shown in the instance table; any other field an instance
// sends (per-tool state, say) is shown below it as it comes.
const KNOWN = new Set(["server", "schema_status", "posture", "baseline_fingerprint",
  "live_fingerprint", "candidate_fingerprint", "live_invalid", "drift_at_ms",
  "awaiting_verification", "quarantine", "findings", "updated_ms", "diff_summary", "diff"]);
const CLASSES = ["additive", "breaking", "semantic", "authority"];

let selected = null;
let lastState = null;
let lastDetail = null;
let pending = null;

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function short(fp) {
  if (typeof fp !== "string") return el("span", {class: "note", text: "none"});
  return el("span", {class: "fp", title: fp, text: fp.length > 19 ? fp.slice(0, 19) + "…" : fp});
}

function when(ms) {
  return typeof ms === "number" ? new Date(ms).toISOString() : "";
}

// With a fleet store, whether this instance's copy of the record is the fleet's: a closure
// made here that etcd has not accepted yet is "waiting for the fleet store".
function fleetNote(view) {
  if (!view.fleet) return null;
  return el("div", {class: "fleet", "data-fleet": view.fleet.in_step ? "in-step" : "waiting",
    text: view.fleet.in_step ? "in step with the fleet (revision " + view.fleet.mod_revision + ")"
                             : "waiting for the fleet store"});
}

function status(name) {
  const s = name || "unknown";
  return el("span", {class: "status " + s.replace(/[^a-z-]/g, ""), text: s});
}

async function api(path, options) {
  const init = Object.assign({credentials: "same-origin", cache: "no-store"}, options || {});
  init.headers = Object.assign({"X-Toolseal-Console": TOKEN}, init.headers || {});
  const response = await fetch(path, init);
  let body = null;
  try { body = await response.json(); } catch (e) { body = {error: "unreadable answer"}; }
  return {status: response.status, body};
}

function renderHeader(state) {
  const ecds = state.ecds || {};
  const summary = document.getElementById("fleet-summary");
  const versions = ecds.version == null ? []
    : [" version ", el("code", {id: "ecds-version", text: ecds.version}), " and ",
       el("code", {text: ecds.admin_path}), " version ",
       el("code", {id: "admin-ecds-version", text: ecds.admin_version})];
  summary.replaceChildren(
    "operator ", el("strong", {text: state.operator}), " · plugin configuration ",
    el("code", {text: ecds.path}), ...versions,
    ...(ecds.error ? [el("span", {class: "warning", id: "ecds-error", text: " " + ecds.error})] : []));
  document.getElementById("instances").replaceChildren(...state.instances.map((i) =>
    el("li", {class: i.error ? "down" : null, title: i.error || i.admin_url, "data-instance": i.name},
      i.name, i.error ? " — unreachable: " + i.error : "")));
}

function renderServers(state) {
  const rows = state.servers.map((s) => {
    const views = s.instances.map((i) => i.view).filter(Boolean);
    const first = views[0] || {};
    const odd = (field) => s.disagree.includes(field) ? "disagree" : null;
    const cfg = s.config || {};
    const config = [];
    if (cfg.lock) config.push(el("div", {}, "lock ", short(cfg.lock.fingerprint)));
    if (cfg.pin) config.push(el("div", {}, "pin ", short(cfg.pin)));
    if (cfg.quarantine) config.push(el("div", {}, "quarantine: ", el("span", {text: cfg.quarantine})));
    return el("tr", {"data-server": s.server, class: s.server === selected ? "selected" : null},
      el("td", {}, el("strong", {text: s.server}), s.disagree.length ? el("div", {class: "warning", text: "instances disagree"}) : null),
      el("td", {class: odd("schema_status")}, s.instances.map((i) =>
        el("div", {"data-instance": i.instance}, i.instance + " ",
          i.error ? status("unreachable") : i.view ? status(i.view.schema_status) : status("not-seen"),
          i.view ? containment(i.view) : null, i.view ? viewsNote(i.view) : null,
          i.view ? fleetNote(i.view) : null))),
      el("td", {class: odd("baseline_fingerprint")}, short(first.baseline_fingerprint)),
      el("td", {class: odd("live_fingerprint")}, short(first.live_fingerprint)),
      el("td", {}, views.filter((v) => v.drift_at_ms).map((v) => el("div", {text: when(v.drift_at_ms)}))),
      el("td", {}, config));
  });
  document.querySelector("#servers tbody").replaceChildren(...rows);
  for (const row of document.querySelectorAll("#servers tbody tr")) {
    row.addEventListener("click", () => select(row.getAttribute("data-server")));
  }
}

function containment(view) {
  // drift_scope "tool": a changed server that still serves its unchanged tools says how many
  // it withholds (the detail lists them, with why).
  if (view.serving !== "unchanged_tools") return null;
  const count = (view.withheld_tools || []).length;
  return el("span", {class: "note", "data-serving": "unchanged_tools",
    text: " serving unchanged tools, " + count + " withheld"});
}

function viewsNote(view) {
  // Surface views: how many kinds of caller this instance tells apart, and whether one's list
  // awaits review (the detail lists them).
  const count = Array.isArray(view.views) ? view.views.length : 0;
  if (!count && !view.drifted_view) return null;
  return el("span", {class: "note", "data-views": String(count),
    text: " · " + count + (count === 1 ? " view" : " views") + (view.drifted_view ? ", a list awaits review" : "")});
}

// A view's sources as the admin API gives them ({label: value}; header and metadata values
// already hashed by the plugin): "revision = 2025-11-25, capabilities = []".
function sourcesText(view) {
  const sources = view && typeof view.sources === "object" && view.sources !== null ? view.sources : {};
  const parts = Object.entries(sources).map(([label, value]) =>
    label + " = " + (value === null || value === undefined ? "(absent)" : valueText(value)));
  return parts.length ? parts.join(", ") : "(no sources)";
}

function namesOf(view) {
  return view && Array.isArray(view.names) ? view.names.map(valueText) : [];
}

function viewRow(label, view, state) {
  const names = namesOf(view);
  return el("tr", {"data-view": valueText(view && view.key), "data-state": state},
    el("td", {}, label, state === "recorded" ? null : el("span", {class: "badge drifted", text: state === "drifted" ? "drifted" : "awaiting review"})),
    el("td", {class: "text", text: sourcesText(view)}),
    el("td", {text: String(names.length)}),
    el("td", {class: "text", text: names.join(" ")}),
    el("td", {text: when(view && view.first_seen_ms)}),
    el("td", {text: when(view && view.last_seen_ms)}));
}

function viewsTable(views, drifted) {
  // Every view this instance recorded, then the lists that made the candidate (each a
  // recorded view's new names, or a view not recorded before).
  const list = views.filter((v) => v && typeof v === "object");
  const drifts = drifted.filter((d) => d && typeof d === "object");
  const at = (d) => list.findIndex((v) => v.key === d.key);
  const rows = list.map((v, n) => viewRow("view " + (n + 1) + " ", v,
    drifts.some((d) => d.key === v.key) ? "drifted" : "recorded"));
  const fresh = drifts.filter((d) => at(d) < 0).length;
  let newViews = 0;
  for (const d of drifts) {
    const n = at(d);
    const label = n >= 0 ? "view " + (n + 1) + ", as the drift listed it "
      : (fresh === 1 ? "new view " : "new view " + (++newViews) + " ");
    rows.push(viewRow(label, d, "drift"));
  }
  return el("table", {class: "grid"},
    el("tr", {}, ["view", "sources", "tools", "names", "first seen", "last seen"].map((h) => el("th", {text: h}))), rows);
}

// The lists that made the candidate: those of drifted_views_also, then drifted_view.
function driftedLists(view) {
  const also = Array.isArray(view.drifted_views_also) ? view.drifted_views_also : [];
  return view.drifted_view ? also.concat([view.drifted_view]) : also;
}

function valueText(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function renderExtra(views) {
  // Fields the console does not know yet, as the instances sent them.
  const blocks = [];
  for (const {instance, view} of views) {
    for (const [key, value] of Object.entries(view || {})) {
      if (KNOWN.has(key)) continue;
      let body;
      if (key === "withheld_tools" && Array.isArray(value)) {
        // drift_scope "tool": each withheld tool, how it differs, and its classified changes.
        body = el("table", {class: "grid"}, el("tr", {}, ["tool", "change", "what changed"].map((h) => el("th", {text: h}))),
          value.map((w) => el("tr", {}, el("td", {class: "text", text: valueText(w.tool)}),
            el("td", {text: valueText(w.change)}),
            el("td", {class: "text", text: (Array.isArray(w.changes) ? w.changes : [])
              .map((c) => valueText(c.kind) + (c.path ? " " + valueText(c.path) : "")).join("; ")}))));
      } else if (key === "views" && Array.isArray(value)) {
        body = viewsTable(value, driftedLists(view));
      } else if (key === "drifted_views_also") {
        continue; // in the views table
      } else if (key === "drifted_view") {
        // Shown in the views table; here which kinds of caller showed the candidate.
        const lists = driftedLists(view);
        body = lists.length
          ? lists.map((d) => el("div", {class: "text", text: "shown to " + sourcesText(d) + ": " + namesOf(d).length +
              " tools"}))
          : el("div", {class: "note", text: "no view's list awaits review"});
      } else if (Array.isArray(value) && value.every((v) => v && typeof v === "object" && !Array.isArray(v))) {
        const keys = [...new Set(value.flatMap((v) => Object.keys(v)))];
        body = el("table", {class: "grid"}, el("tr", {}, keys.map((k) => el("th", {text: k}))),
          value.map((v) => el("tr", {}, keys.map((k) => el("td", {class: "text", text: valueText(v[k])})))));
      } else {
        body = el("div", {class: "text", text: valueText(value)});
      }
      blocks.push(el("div", {class: "extra", "data-field": key}, el("h3", {text: instance + ": " + key}), body));
    }
  }
  document.getElementById("detail-extra").replaceChildren(...blocks);
}

function renderInstances(detail, row) {
  const head = el("tr", {}, ["instance", "status", "posture", "baseline", "live", "candidate", "drifted at",
    "quarantine", "findings", "updated"].map((h) => el("th", {text: h})));
  const odd = (field) => row && row.disagree.includes(field) ? "disagree" : null;
  const body = detail.instances.map(({instance, view, error}) => {
    if (error) return el("tr", {"data-instance": instance}, el("td", {text: instance}), el("td", {colspan: 9}, status("unreachable"), " " + error));
    if (!view) return el("tr", {"data-instance": instance}, el("td", {text: instance}), el("td", {colspan: 9}, status("not-seen"), " this instance has not seen the server"));
    const q = view.quarantine;
    return el("tr", {"data-instance": instance},
      el("td", {text: instance}),
      el("td", {class: odd("schema_status")}, status(view.schema_status), view.awaiting_verification ? " awaiting verification" : ""),
      el("td", {text: view.posture}),
      el("td", {class: odd("baseline_fingerprint")}, short(view.baseline_fingerprint)),
      el("td", {class: odd("live_fingerprint")}, short(view.live_fingerprint), view.live_invalid ? " (invalid set)" : ""),
      el("td", {}, short(view.candidate_fingerprint)),
      el("td", {text: when(view.drift_at_ms)}),
      el("td", {class: "text", text: q ? q.reason + " (by " + valueText(q.by) + ")" : ""}),
      el("td", {class: "findings"}, (view.findings || []).map((f) => el("div", {class: "text", text: valueText(f)}))),
      el("td", {text: when(view.updated_ms)}));
  });
  document.getElementById("detail-instances").replaceChildren(head, ...body);
}

function excerpt(value) {
  const text = valueText(value);
  return text.length > 400 ? text.slice(0, 400) + "…" : text;
}

// Likely renames the console finds in the diff (a removed and an added tool with the same
// inputSchema): a hint beside the classes, which stay those of a removal and an addition.
function renderRenames(renames) {
  const likely = (renames && Array.isArray(renames.likely)) ? renames.likely : [];
  const possible = (renames && Array.isArray(renames.possible)) ? renames.possible : [];
  if (!likely.length && !possible.length) return null;
  const rows = likely.map((r) => el("tr", {class: "rename"},
    el("td", {}, el("code", {text: r.from})), el("td", {}, el("code", {text: r.to})),
    el("td", {class: "text"}, (Array.isArray(r.changes) && r.changes.length ? r.changes : [null]).map((c) => c
      ? el("div", {}, el("span", {class: "badge " + (CLASSES.includes(c.class) ? c.class : "zero"), text: c.class}), " " + c.kind + " ", el("code", {text: c.path || "(whole tool)"}))
      : el("div", {text: "nothing else: only the name"})))));
  return el("div", {class: "renames"},
    el("p", {text: "Likely renames: a removed and an added tool take the same arguments (same inputSchema). Still drift: calls to the old name fail."}),
    likely.length ? el("table", {class: "grid"}, el("tr", {}, ["from", "to", "what else changed"].map((h) => el("th", {text: h}))), rows) : null,
    possible.map((p) => el("p", {class: "note", text: "Possible renames, not paired (one inputSchema shared by several tools): " +
      (p.removed || []).join(", ") + " → " + (p.added || []).join(", ")})));
}

function renderDiff(views) {
  // One classified diff per distinct candidate (instances that agree share one).
  const seen = new Map();
  for (const {instance, view, renames} of views) {
    if (!view || !view.diff) continue;
    const key = String(view.baseline_fingerprint) + ">" + String(view.live_fingerprint);
    if (!seen.has(key)) seen.set(key, {view, renames, instances: []});
    seen.get(key).instances.push(instance);
  }
  const blocks = [...seen.values()].map(({view, renames, instances}) => {
    const summary = view.diff.summary || {};
    const counts = el("ul", {class: "counts"}, CLASSES.map((c) => {
      const n = (summary.classes || {})[c] || 0;
      return el("li", {}, el("span", {class: "badge " + (n ? c : "zero"), text: c}), " " + n);
    }));
    const rows = (view.diff.changes || []).map((c) => el("tr", {class: "change"},
      el("td", {}, el("span", {class: "badge " + (CLASSES.includes(c.class) ? c.class : "zero"), text: c.class})),
      el("td", {}, el("code", {text: c.tool})), el("td", {text: c.kind}), el("td", {}, el("code", {text: c.path || "(whole tool)"})),
      el("td", {class: "text", text: ("before" in c ? excerpt(c.before) : "(absent)") + "  →  " + ("after" in c ? excerpt(c.after) : "(absent)")})));
    return el("div", {class: "diff"},
      el("p", {}, "seen by ", instances.join(", "), ": ", short(view.baseline_fingerprint), " → ", short(view.live_fingerprint)),
      counts,
      el("table", {class: "grid"}, el("tr", {}, ["class", "tool", "change", "where", "before → after"].map((h) => el("th", {text: h}))), rows),
      renderRenames(renames));
  });
  document.getElementById("detail-diff").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "note", text: "No drift: every instance's live set is its baseline."})]));
}

// The candidate an approval would be bound to: the one live set every instance that listed
// the server reports, when it is not already everyone's baseline.
function reviewTarget(detail) {
  const views = detail.instances.map((i) => i.view).filter(Boolean);
  const lives = [...new Set(views.map((v) => v.live_fingerprint).filter(Boolean))];
  if (lives.length !== 1 || detail.instances.some((i) => i.error)) return null;
  const candidate = views.find((v) => v.candidate_fingerprint === lives[0]);
  if (!candidate) return null;
  return {candidate: lives[0], baseline: candidate.baseline_fingerprint};
}

function renderReview(detail) {
  const target = reviewTarget(detail);
  const frame = document.getElementById("review-frame");
  const note = document.getElementById("review-note");
  if (!target) {
    frame.hidden = true;
    frame.removeAttribute("src");
    note.textContent = "Nothing to review: no single candidate that differs from a baseline.";
    return;
  }
  const params = new URLSearchParams({server: detail.server, candidate: target.candidate, baseline: target.baseline || ""});
  const src = "/report?" + params.toString();
  if (frame.getAttribute("src") !== src) {
    frame.setAttribute("sandbox", "allow-same-origin");
    frame.setAttribute("src", src);
  }
  frame.hidden = false;
  note.replaceChildren("Baseline ", short(target.baseline), " against candidate ", short(target.candidate),
    ", as toolseal report shows it.");
}

function renderActions(detail, row) {
  const target = reviewTarget(detail);
  const approve = document.getElementById("approve");
  approve.disabled = !target;
  approve.dataset.fingerprint = target ? target.candidate : "";
  document.getElementById("quarantine").disabled = false;
  document.getElementById("release").disabled = !(row && row.config && row.config.quarantine);
}

function renderDetail() {
  const section = document.getElementById("detail");
  if (!selected || !lastDetail || lastDetail.server !== selected) { section.hidden = true; return; }
  const row = lastState && lastState.servers.find((s) => s.server === selected);
  section.hidden = false;
  document.getElementById("detail-title").textContent = selected;
  const disagree = document.getElementById("detail-disagree");
  disagree.hidden = !(row && row.disagree.length);
  disagree.textContent = row && row.disagree.length ? "Instances disagree on: " + row.disagree.join(", ") : "";
  renderInstances(lastDetail, row);
  renderExtra(lastDetail.instances);
  renderDiff(lastDetail.instances);
  renderReview(lastDetail);
  renderActions(lastDetail, row);
}

function renderConvergence(state) {
  const blocks = state.actions.map((a) => el("div", {class: "action" + (a.converged ? " done" : ""), "data-action": a.action, "data-server": a.server},
    el("p", {}, el("strong", {text: a.action}), " ", el("code", {text: a.server}), " → ", a.expected,
      " (ECDS version ", el("code", {text: a.version}), ") ", a.converged ? "— every instance converged" : "— converging…"),
    a.instances.map((i) => el("span", {class: "state " + i.state.replace(" ", "-"), "data-instance": i.instance},
      i.instance + ": " + i.state + (i.schema_status ? " (" + i.schema_status + ")" : "")))));
  document.getElementById("actions").replaceChildren(...(blocks.length ? blocks : [el("p", {class: "note", text: "No action yet."})]));
}

function renderAudit(events) {
  document.querySelector("#audit tbody").replaceChildren(...events.slice().reverse().map((e) => el("tr", {"data-result": e.result},
    el("td", {text: e.time}), el("td", {text: e.operator}), el("td", {text: e.action}), el("td", {}, el("code", {text: e.server})),
    el("td", {class: "text", text: e.fingerprint || e.reason || e.expected || ""}), el("td", {text: e.result}), el("td", {class: "text", text: e.message || ""}))));
}

let refreshing = false;

async function refresh() {
  if (refreshing) return;
  refreshing = true;
  try {
    // Everything is fetched first and drawn together, so one screen never mixes two polls.
    const server = selected;
    const [state, detail, audit] = await Promise.all([
      api("/api/state"),
      server ? api("/api/servers/" + encodeURIComponent(server)) : Promise.resolve(null),
      api("/api/audit")]);
    if (state.status === 200) {
      lastState = state.body;
      renderHeader(lastState);
      renderServers(lastState);
      renderConvergence(lastState);
    }
    if (detail && detail.status === 200 && server === selected) lastDetail = detail.body;
    renderDetail();
    if (audit.status === 200) renderAudit(audit.body.events);
    document.body.dataset.refreshed = String(Date.now());
  } catch (e) {
    document.getElementById("fleet-summary").textContent = "console unreachable: " + e;
  } finally {
    refreshing = false;
  }
}

function select(server) {
  selected = server;
  lastDetail = null;
  cancel();
  refresh();
}

function ask(text, action, body) {
  pending = {action, body, server: selected};
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-box").hidden = false;
}

function cancel() {
  pending = null;
  document.getElementById("confirm-box").hidden = true;
}

async function confirmAction() {
  if (!pending) return;
  const {action, body, server} = pending;
  cancel();
  const result = document.getElementById("action-result");
  result.className = "";
  result.textContent = action + " " + server + "…";
  const answer = await api("/api/servers/" + encodeURIComponent(server) + "/" + action, {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  result.className = answer.status === 200 ? "ok" : "refused";
  result.textContent = answer.body.message || answer.body.error || ("HTTP " + answer.status);
  refresh();
}

document.addEventListener("DOMContentLoaded", () => {
  const count = () => lastState ? lastState.instances.length : 0;
  document.getElementById("approve").addEventListener("click", (event) => {
    const fp = event.target.dataset.fingerprint;
    ask("Approve " + fp + " for " + selected + " on all " + count() + " instances? A lock of exactly this tool set is written into the fleet's plugin configuration; it is refused if any instance has moved on.", "approve", {fingerprint: fp});
  });
  document.getElementById("quarantine").addEventListener("click", () => {
    const reason = document.getElementById("quarantine-reason").value.trim();
    if (!reason) {
      document.getElementById("action-result").textContent = "Say why: a quarantine needs a reason.";
      return;
    }
    ask("Quarantine " + selected + " on all " + count() + " instances? Reason: " + reason, "quarantine", {reason});
  });
  document.getElementById("release").addEventListener("click", () => {
    ask("Release the configured quarantine of " + selected + " on all " + count() + " instances?", "release", {});
  });
  document.getElementById("confirm").addEventListener("click", confirmAction);
  document.getElementById("cancel").addEventListener("click", cancel);
  refresh();
  setInterval(refresh, POLL_MS);
});
