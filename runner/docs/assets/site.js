// Draws the report from the JSON embedded in index.html. Every number was computed in Python
// (runner/docs/charts.py); this file only lays it out, with plain DOM calls and inline SVG, so
// the page works offline. Text from the data is always set with textContent, never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const KIND_COLOURS = {
  commit: "#2563eb", clean: "#059669", replace: "#7c3aed", clustering: "#db2777",
  savepoint: "#d97706", compaction: "#0891b2", rollback: "#dc2626", other: "#6b7280",
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function plural(n, noun) { return `${n} ${noun}${n === 1 ? "" : "s"}`; }

function chart(kind, width, height) {
  return svg("svg", { class: `chart ${kind}`, "data-chart": kind, viewBox: `0 0 ${width} ${height}`,
                      role: "img" });
}

function titled(node, text) { node.append(svg("title", {}, text)); return node; }

function histogram(h) {
  const W = 560, H = 220, L = 40, R = 10, T = 16, B = 36;
  const s = chart("histogram", W, H);
  const top = Math.max(1, ...h.bins.map(b => b.count));
  const xmax = h.bins[h.bins.length - 1].end;
  const x = v => L + (W - L - R) * v / xmax;
  const y = c => H - B - (H - B - T) * c / top;
  s.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  s.append(svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  s.append(svg("text", { x: L - 6, y: T + 4, "text-anchor": "end" }, top));
  s.append(svg("text", { x: L - 6, y: H - B, "text-anchor": "end" }, 0));
  for (const b of h.bins) {
    if (!b.count) continue;
    s.append(titled(svg("rect", { class: "bar", x: x(b.start) + 1, y: y(b.count),
                                  width: Math.max(1, x(b.end) - x(b.start) - 2), height: H - B - y(b.count) }),
                    `${plural(b.count, "file")} of ${bytes(b.start)} to ${bytes(b.end)}`));
  }
  const marks = [["small", h.small_file_limit, "small-file limit"], ["max", h.max_file_size, "max file size"]];
  marks.forEach(([cls, value, label], i) => {
    if (value <= 0) return;
    s.append(titled(svg("line", { class: `marker ${cls}`, "data-value": value, x1: x(value), y1: T - 6,
                                  x2: x(value), y2: H - B }), `${label}: ${bytes(value)}`));
    const anchor = x(value) > W - 90 ? "end" : x(value) < L + 90 ? "start" : "middle";
    s.append(svg("text", { x: x(value), y: H - B + 14 + 12 * i, "text-anchor": anchor },
                 `${label} ${bytes(value)}`));
  });
  return s;
}

function versions(v) {
  const W = 560, H = 200, L = 40, R = 10, T = 16, B = 32;
  const s = chart("versions", W, H);
  const rows = v.versions;
  const top = Math.max(1, ...rows.map(r => r.active_groups + r.replaced_groups));
  const slot = (W - L - R) / rows.length;
  const y = c => (H - B - T) * c / top;
  s.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  s.append(svg("text", { x: L - 6, y: T + 4, "text-anchor": "end" }, top));
  rows.forEach((r, i) => {
    const x0 = L + i * slot + slot * 0.15, w = slot * 0.7;
    let base = H - B;
    for (const [cls, count, what] of [["active", r.active_groups, "active"], ["replaced", r.replaced_groups, "replaced"]]) {
      if (!count) continue;
      base -= y(count);
      s.append(titled(svg("rect", { class: `bar ${cls === "replaced" ? "replaced" : ""}`, x: x0, y: base,
                                    width: w, height: y(count) }),
                      `${plural(count, what + " file group")} with ${plural(r.versions, "version")}`));
    }
    s.append(svg("text", { x: x0 + w / 2, y: H - B + 14, "text-anchor": "middle" }, r.versions));
  });
  s.append(svg("text", { x: (W + L) / 2, y: H - 4, "text-anchor": "middle" }, "versions (slices) per file group"));
  return s;
}

function reclaimable(rows) {
  const W = 1080, row = 22, L = 220, R = 90, T = 6;
  const s = chart("reclaimable", W, T * 2 + row * Math.max(rows.length, 1));
  const top = Math.max(1, ...rows.map(r => r.bytes));
  rows.forEach((r, i) => {
    const y0 = T + i * row;
    const w = Math.max(2, (W - L - R) * r.bytes / top);
    s.append(svg("text", { x: L - 6, y: y0 + 15, "text-anchor": "end" }, r.partition));
    s.append(titled(svg("rect", { class: "bar reclaim", x: L, y: y0 + 3, width: w, height: row - 6 }),
                    `${r.partition}: ${plural(r.files, "file")}, ${bytes(r.bytes)}`));
    s.append(svg("text", { x: L + w + 6, y: y0 + 15 }, bytes(r.bytes)));
  });
  return s;
}

function timeline(points) {
  const W = 1080, L = 20, R = 20;
  const kinds = Object.keys(KIND_COLOURS);
  const used = kinds.filter(k => points.some(p => p.kind === k));
  const lane = k => 20 + 16 * used.indexOf(k);
  const times = points.map(p => Date.parse(p.iso));
  const t0 = Math.min(...times), t1 = Math.max(...times);
  const span = Math.max(1, t1 - t0);
  const x = t => L + (W - L - R) * (t - t0) / span;
  const axisY = 28 + 16 * used.length;
  const s = chart("timeline", W, axisY + 24);
  s.append(svg("line", { class: "axis", x1: L, y1: axisY, x2: W - R, y2: axisY }));
  points.forEach((p, i) => {
    const c = svg("circle", { class: `instant ${p.state === "completed" ? "" : "pending"}`, "data-kind": p.kind,
                              cx: x(times[i]), cy: lane(p.kind), r: 5, fill: KIND_COLOURS[p.kind],
                              stroke: KIND_COLOURS[p.kind] });
    s.append(titled(c, `${p.time} ${p.action}${p.state === "completed" ? "" : " (" + p.state + ")"}`));
  });
  for (const t of [t0, t1]) {
    s.append(svg("text", { x: x(t), y: axisY + 16, "text-anchor": t === t0 ? "start" : "end" },
                 new Date(t).toISOString().replace("T", " ").slice(0, 19)));
  }
  return s;
}

function legend(points) {
  const box = el("div", { class: "legend" });
  for (const [k, colour] of Object.entries(KIND_COLOURS)) {
    const n = points.filter(p => p.kind === k).length;
    if (!n) continue;
    const dot = el("i"); dot.style.background = colour;
    box.append(el("span", {}, dot, `${k} (${n})`));
  }
  box.append(el("span", {}, "hollow = pending"));
  return box;
}

function settingsTable(decl, byteSettings) {
  const t = el("table", { class: "kv" });
  const add = (k, v, src) => t.append(el("tr", {}, el("td", {}, k), el("td", {}, v), el("td", { class: "src" }, src || "")));
  add("path", decl.path); add("declared in", decl.source_file);
  if (decl.owner) add("owner", decl.owner);
  if (decl.tags.length) add("tags", decl.tags.join(", "));
  add("metadata_table", decl.metadata_table);
  for (const [k, s] of Object.entries(decl.settings)) {
    const size = byteSettings.includes(k) && typeof s.value === "number";
    add(k, size ? `${bytes(s.value)} (${s.value.toLocaleString("en")} bytes)` : String(s.value), s.source);
  }
  return t;
}

function planSummary(p) {
  const box = el("div");
  const step = (kind) => (p.steps || []).find((s) => s.kind === kind);
  const clean = step("clean"), sizing = step("resize");
  const files = clean ? clean.files_to_delete.length : 0;
  box.append(el("div", {}, `clean (${clean ? clean.policy : "none"}): ${plural(files, "file")} to delete, `
    + `${bytes(clean ? clean.bytes_to_reclaim : 0)} reclaimable; ${clean ? clean.scope : ""}`));
  if (clean && clean.why) box.append(el("div", { class: "sub" }, `why: ${clean.why}`));
  if (clean && clean.kept.length) {
    box.append(el("div", { class: "sub" }, `kept: ${plural(clean.kept.length, "file")} (${clean.kept[0].reason}${clean.kept.length > 1 ? ", ..." : ""})`));
  }
  for (const d of p.drift || []) box.append(el("div", { class: "error" }, `drift: ${d}`));
  if (sizing && sizing.groups.length) {
    const n = sizing.groups.reduce((a, g) => a + g.files.length, 0);
    box.append(el("div", {}, `resize: ${plural(n, "small file")} into ${plural(sizing.groups.length, "file")}`));
  }
  for (const n of p.notes) box.append(el("div", { class: "sub" }, `note: ${n}`));
  return box;
}

function tableSection(t, byteSettings) {
  const sec = el("section", { class: "table", id: `table-${t.name}` });
  const status = t.error ? "error" : t.plan.status;
  sec.append(el("h2", {}, t.name, el("span", { class: `badge ${status}` }, status.replace("_", " "))));
  if (t.declaration.description) sec.append(el("div", { class: "sub" }, t.declaration.description));
  if (t.error) {
    sec.append(el("div", { class: "error" }, t.error.message));
  } else {
    sec.append(el("div", { class: "sub" }, `${t.table_type}, table version ${t.table_version}`));
    sec.append(planSummary(t.plan));
    const grid = el("div", { class: "grid" });
    const h = t.histogram;
    grid.append(el("div", {}, el("h3", {}, "Latest base file sizes"),
      el("div", { class: "sub" }, `${plural(h.files, "file")}, ${h.small_files} below the small-file limit`),
      histogram(h)));
    grid.append(el("div", {}, el("h3", {}, "Versions per file group"),
      el("div", { class: "sub" }, `up to ${plural(t.versions.max_versions, "version")}; grey: replaced groups`),
      versions(t.versions)));
    sec.append(grid);
    sec.append(el("h3", {}, "Bytes reclaimable per partition"));
    sec.append(t.reclaimable.length ? reclaimable(t.reclaimable) : el("div", { class: "empty" }, "nothing to reclaim"));
    sec.append(el("h3", {}, "Timeline"));
    sec.append(t.timeline.length ? timeline(t.timeline) : el("div", { class: "empty" }, "no instants"));
    sec.append(legend(t.timeline));
  }
  sec.append(el("h3", {}, "Declaration"));
  const grid = el("div", { class: "grid" });
  grid.append(settingsTable(t.declaration, byteSettings));
  grid.append(t.source_yaml === null ? el("div", { class: "empty" }, "source file not readable") : el("pre", {}, t.source_yaml));
  sec.append(grid);
  return sec;
}

function runSection(run) {
  const sec = el("section", { class: "run", id: "last-run" });
  sec.append(el("h2", {}, "Last run"));
  if (!run) { sec.append(el("div", { class: "empty" }, "no target/run_results.json yet: run `runner apply`")); return sec; }
  if (run.error) { sec.append(el("div", { class: "error" }, run.error)); return sec; }
  sec.append(el("div", { class: "sub" }, `run ${run.run_id}, ${run.started_at} to ${run.finished_at}`));
  const t = el("table", { class: "runs" });
  t.append(el("tr", {}, ...["table", "status", "files deleted", "bytes deleted", "files rewritten", "seconds", "instants"]
    .map(h => el("th", {}, h))));
  for (const r of run.tables || []) {
    t.append(el("tr", { "data-status": r.status },
      el("td", {}, r.name), el("td", {}, el("span", { class: `badge ${r.status}` }, r.status)),
      el("td", {}, r.files_deleted), el("td", {}, bytes(r.bytes_deleted)), el("td", {}, r.files_rewritten),
      el("td", {}, r.duration_s), el("td", {}, (r.instants_written || []).join(", ") || (r.error ? r.error.message : ""))));
  }
  sec.append(t);
  return sec;
}

function render(data) {
  const nav = document.querySelector("nav"), main = document.querySelector("main");
  nav.append(el("h1", {}, `project ${data.project}`));
  nav.append(el("div", { class: "meta" }, `as of ${data.now}; generated ${data.generated_at} by runner ${data.runner_version}`));
  for (const t of data.tables) nav.append(el("a", { href: `#table-${t.name}` }, t.name));
  nav.append(el("a", { href: "#last-run" }, "last run"));
  if (!data.tables.length) main.append(el("div", { class: "empty" }, "no tables selected"));
  for (const t of data.tables) main.append(tableSection(t, data.byte_settings));
  main.append(runSection(data.run_results));
  document.body.dataset.rendered = String(document.querySelectorAll("svg.chart").length);
}

try {
  render(JSON.parse(document.getElementById("report-data").textContent));
} catch (e) {
  document.body.dataset.renderError = String(e);
  document.querySelector("main").append(el("div", { class: "error" }, `the report could not be drawn: ${e}`));
  throw e;
}
