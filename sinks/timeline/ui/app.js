// KICK timeline UI: plain JS and SVG, no dependencies, no network beyond
// this server's own JSON API.
"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  const TYPES = ["change", "baseline", "gate", "request", "restart", "completion", "finished", "failure", "event"];
  // Z orders overlapping markers by entry type; a halt (an Event) goes on
  // top of everything.
  const Z = { event: 0, request: 1, baseline: 2, gate: 3, finished: 4, completion: 5, restart: 6, change: 7, failure: 8 };
  const zOf = (e) => (markOf(e) === "halt" ? 9 : Z[e.type] || 0);
  const LABEL_W = 220, RULER_H = 28, NS_H = 20, LANE_H = 24, PAD_R = 12;
  const state = { range: "1h", from: null, to: null, data: null, filter: "" };
  const $ = (id) => document.getElementById(id);

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVGNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function h(tag, cls, text, parent) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function parseDur(s) {
    const m = /^(\d+)([mhd])$/.exec(s);
    if (!m) return 0;
    return +m[1] * { m: 60e3, h: 3600e3, d: 86400e3 }[m[2]];
  }
  function fmtTime(t) {
    const d = new Date(t);
    const p = (n, w) => String(n).padStart(w || 2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
  }
  function toLocalInput(ms) {
    const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60e3);
    return d.toISOString().slice(0, 19);
  }
  function laneKey(w) { return `${w.namespace}/${w.kind}/${w.name}`; }

  // window returns the [from, to] shown, in ms.
  function window_() {
    const now = Date.now();
    if (state.from !== null) return [state.from, state.to];
    if (state.range === "all" && state.data) {
      let lo = now, hi = now;
      for (const l of state.data.lanes) for (const e of l.entries) {
        const t = e.t; if (t < lo) lo = t; if (t > hi) hi = t;
      }
      const pad = Math.max((hi - lo) * 0.03, 5e3);
      return [lo - pad, hi + pad];
    }
    return [now - parseDur(state.range), now + parseDur(state.range) * 0.02];
  }

  async function load() {
    $("status").textContent = "loading…";
    const params = new URLSearchParams();
    if (state.from !== null) {
      params.set("from", new Date(state.from).toISOString());
      params.set("to", new Date(state.to).toISOString());
    } else if (state.range !== "all") {
      params.set("since", state.range);
    }
    try {
      performance.mark("kick:fetch");
      const r = await fetch("/timeline/overview?" + params, { credentials: "same-origin" });
      if (!r.ok) throw new Error(r.status + " " + (await r.text()).trim());
      state.data = await r.json();
      for (const l of state.data.lanes) for (const e of l.entries) e.t = Date.parse(e.time);
      performance.mark("kick:data");
      render();
      $("status").textContent = `${state.data.lanes.length} workloads, updated ${fmtTime(state.data.generated)}`;
      drawn();
    } catch (err) {
      $("status").textContent = "cannot load: " + err.message;
    }
  }

  // drawn marks the first frame painted after the overview was rendered
  // (the second animation frame: the first runs before its paint), for
  // people and benchmarks: performance mark "kick:drawn", and
  // data-drawn on <body> counting the overviews drawn.
  let draws = 0;
  function drawn() {
    requestAnimationFrame(() => requestAnimationFrame(() => {
      performance.mark("kick:drawn");
      document.body.dataset.drawn = String(++draws);
    }));
  }

  function matches(lane) {
    const f = state.filter.trim().toLowerCase();
    return !f || laneKey(lane).toLowerCase().includes(f);
  }

  // segments turns a lane's entries into state-band pieces (same rules as
  // entry.State on the server).
  function segments(entries, from, to) {
    const out = [];
    let s = "idle", since = from;
    const push = (next, t) => {
      if (next === s) return;
      out.push([s, since, t]); s = next; since = t;
    };
    for (const e of entries) {
      const t = e.t;
      let next = s;
      switch (e.type) {
        case "change": if (s !== "waiting") next = "changed"; break;
        case "gate": next = e.reason && e.reason !== "Allowed" ? "waiting" : "changed"; break;
        case "restart": next = "restarting"; break;
        case "completion": case "finished": next = "idle"; break;
        case "failure": next = "failed"; break;
      }
      push(next, Math.max(from, t));
    }
    out.push([s, since, to]);
    return out;
  }

  // The overview is virtualised: the SVG has the height of every lane, but
  // only the rows near the viewport (OVERSCAN pixels above and below) are in
  // the DOM, redrawn as the page scrolls. Markers share one set of
  // listeners on the rows' group (data-i indexes view.items).
  const OVERSCAN = 600, LOG_MAX = 300;
  let view = null;

  function render() {
    const svg = $("lanes");
    svg.textContent = "";
    const [from, to] = window_();
    $("from").value = toLocalInput(from);
    $("to").value = toLocalInput(to);
    const width = Math.max(svg.clientWidth || 900, 500);
    const plotW = width - LABEL_W - PAD_R;
    const x = (t) => LABEL_W + ((t - from) / (to - from)) * plotW;
    const lanes = (state.data ? state.data.lanes : []).filter(matches);

    // Ruler with ticks.
    const ruler = el("rect", { x: LABEL_W, y: 0, width: plotW, height: RULER_H, class: "ruler", "data-role": "ruler" }, svg);
    const span = to - from;
    const steps = [1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 300e3, 900e3, 3600e3, 3 * 3600e3, 6 * 3600e3, 86400e3];
    // A label every 90 pixels at the most.
    const step = steps.find((s) => span / s <= Math.min(10, plotW / 90)) || 86400e3;
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
      el("line", { x1: x(t), x2: x(t), y1: RULER_H - 6, y2: RULER_H, class: "tick" }, svg);
      if (x(t) + 70 > LABEL_W + plotW) continue; // no room for the label
      const d = new Date(t);
      const label = step < 60e3 ? d.toLocaleTimeString() : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      el("text", { x: x(t) + 2, y: 12, class: "ticklabel" }, svg).textContent = label;
    }

    // Rows: a namespace heading before each namespace's lanes.
    let y = RULER_H;
    let ns = null;
    const rows = [];
    const log = [];
    for (const lane of lanes) {
      if (lane.namespace !== ns) {
        ns = lane.namespace;
        rows.push({ y, ns });
        y += NS_H;
      }
      rows.push({ y, lane });
      y += LANE_H;
      for (const e of lane.entries) if (e.t >= from && e.t <= to) log.push([e.t, lane, e]);
    }
    const rowsG = el("g", { id: "rows" }, svg);
    const now = Date.now();
    if (now >= from && now <= to) el("line", { x1: x(now), x2: x(now), y1: 0, y2: y, class: "now" }, svg);
    if (lanes.length === 0) {
      el("text", { x: LABEL_W, y: y + 20, class: "ticklabel" }, svg).textContent = "no managed workloads in this range";
      y += 30;
    }
    svg.setAttribute("height", y + 2);
    svg.setAttribute("viewBox", `0 0 ${width} ${y + 2}`);
    view = { svg, rowsG, rows, from, to, x, width, first: -1, last: -1, items: [] };
    drawRows();
    zoom(svg, ruler, from, to, x);
    renderLog(log);
  }

  // drawRows puts the rows near the viewport into the DOM when they
  // changed since the last call.
  function drawRows() {
    if (!view) return;
    const { svg, rows } = view;
    const top = -svg.getBoundingClientRect().top - OVERSCAN;
    const bottom = top + window.innerHeight + 2 * OVERSCAN;
    let lo = 0, hi = rows.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (rows[mid].y + LANE_H < top) lo = mid + 1; else hi = mid; }
    let last = lo;
    while (last < rows.length && rows[last].y <= bottom) last++;
    if (lo === view.first && last === view.last) return;
    view.first = lo; view.last = last;
    const g = view.rowsG;
    g.textContent = "";
    view.items = [];
    for (let i = lo; i < last; i++) {
      const r = rows[i];
      if (r.ns !== undefined) {
        el("rect", { x: 0, y: r.y, width: view.width, height: NS_H, class: "nsrow" }, g);
        el("text", { x: 6, y: r.y + 14, class: "ns" }, g).textContent = r.ns;
      } else {
        drawLane(g, r.lane, r.y);
      }
    }
  }

  function drawLane(parent, lane, y) {
    const { from, to, x, width } = view;
    const g = el("g", { "data-lane": laneKey(lane), "data-state": lane.state, class: "lane" }, parent);
    el("rect", { x: 0, y, width, height: LANE_H, class: "lanebg" }, g);
    for (const [s, a, b] of segments(lane.entries, from, to)) {
      if (b <= from || a >= to) continue;
      el("rect", { x: x(Math.max(a, from)), y: y + 4, width: Math.max(0, x(Math.min(b, to)) - x(Math.max(a, from))), height: LANE_H - 8, class: "band s-" + s }, g);
    }
    const label = el("text", { x: 14, y: y + 16, class: "lanelabel" }, g);
    label.textContent = `${lane.kind}/${lane.name}`;
    label.setAttribute("data-i", view.items.push([lane, null]) - 1);
    const cy = y + LANE_H / 2;
    // Markers a few milliseconds apart overlap: the change, restart and
    // completion go on top of the gate, request and Event markers.
    const shown = lane.entries.filter((e) => e.t >= from && e.t <= to);
    shown.sort((a, b) => zOf(a) - zOf(b));
    for (const e of shown) {
      const mark = markOf(e);
      const m = marker(mark, x(e.t), cy, "marker m-" + (mark === "event" && e.warning ? "warning" : mark), g);
      m.setAttribute("data-type", e.type);
      if (mark !== e.type) m.setAttribute("data-mark", mark);
      m.setAttribute("data-time", e.time);
      m.setAttribute("data-i", view.items.push([lane, e]) - 1);
    }
  }

  // markOf is the marker an entry gets: its type, except for a halted
  // fan-out: "halt" on the lane of the workload whose failed rollout halted
  // it (the RolloutHalted Event), "held" on the lanes it holds (their gate,
  // and the HeldByRolloutHalt Event of their request);
  // and for a person's KickHold: "hold" on the lanes it holds (their gate
  // with reason Held, and the HeldByKickHold Event).
  function markOf(e) {
    if (e.reason === "RolloutHalted") return e.type === "gate" ? "held" : "halt";
    if (e.reason === "HeldByRolloutHalt") return "held";
    if ((e.type === "gate" && e.reason === "Held") || e.reason === "HeldByKickHold") return "hold";
    return e.type;
  }

  // marker draws the shape of a marker kind centred on cx, cy.
  function marker(type, cx, cy, cls, parent) {
    switch (type) {
      case "halt": case "held": {
        // An octagon, as a stop sign.
        const r = type === "halt" ? 7 : 5, k = r * 0.414;
        const pts = [[-k, -r], [k, -r], [r, -k], [r, k], [k, r], [-k, r], [-r, k], [-r, -k]];
        return el("polygon", { points: pts.map(([dx, dy]) => `${cx + dx},${cy + dy}`).join(" "), class: cls }, parent);
      }
      case "hold": {
        // Two bars, as a pause sign: a person paused these restarts.
        const bar = (x0) => `M${x0},${cy - 6}h3.5v12h-3.5z`;
        return el("path", { d: bar(cx - 5) + bar(cx + 1.5), class: cls }, parent);
      }
      case "change": return el("polygon", { points: `${cx},${cy - 7} ${cx + 7},${cy} ${cx},${cy + 7} ${cx - 7},${cy}`, class: cls }, parent);
      case "restart": return el("polygon", { points: `${cx - 6},${cy - 7} ${cx + 7},${cy} ${cx - 6},${cy + 7}`, class: cls }, parent);
      case "gate": return el("rect", { x: cx - 5, y: cy - 5, width: 10, height: 10, class: cls }, parent);
      case "failure": return el("rect", { x: cx - 6, y: cy - 6, width: 12, height: 12, transform: `rotate(45 ${cx} ${cy})`, class: cls }, parent);
      case "event": return el("circle", { cx, cy, r: 3.5, class: cls }, parent);
    }
    return el("circle", { cx, cy, r: 6, class: cls }, parent);
  }

  // item is the [lane, entry] a marker or label stands for (entry null for
  // a label).
  function item(target) {
    const i = target.getAttribute && target.getAttribute("data-i");
    return i === null || i === undefined || !view ? null : view.items[+i];
  }

  function renderLog(items) {
    items.sort((a, b) => b[0] - a[0]);
    const ol = $("log");
    ol.textContent = "";
    for (const [, lane, e] of items.slice(0, LOG_MAX)) {
      const li = h("li", "", undefined, ol);
      li.setAttribute("data-type", e.type);
      const dot = h("span", "dot", undefined, li);
      dot.classList.add("bg-" + e.type);
      h("span", "t", fmtTime(e.time), li);
      h("span", "w", `${lane.namespace}/${lane.name} `, li);
      h("span", "", e.summary + (e.note ? " — " + e.note : ""), li);
    }
    if (items.length > LOG_MAX) h("li", "more", `newest ${LOG_MAX} of ${items.length} events in this range; zoom in or filter for older ones`, ol);
  }

  function zoom(svg, ruler, from, to, x) {
    let start = null, sel = null;
    const toTime = (px) => from + ((px - LABEL_W) / (x(to) - LABEL_W)) * (to - from);
    const local = (ev) => {
      const r = svg.getBoundingClientRect();
      return (ev.clientX - r.left) * (svg.viewBox.baseVal.width / r.width);
    };
    ruler.addEventListener("mousedown", (ev) => {
      start = local(ev);
      sel = el("rect", { x: start, y: 0, width: 0, height: RULER_H, class: "sel" }, svg);
      ev.preventDefault();
    });
    svg.onmousemove = (ev) => {
      if (start === null) return;
      const cur = local(ev);
      sel.setAttribute("x", Math.min(start, cur));
      sel.setAttribute("width", Math.abs(cur - start));
    };
    svg.onmouseup = (ev) => {
      if (start === null) return;
      const a = toTime(Math.min(start, local(ev))), b = toTime(Math.max(start, local(ev)));
      start = null;
      if (b - a > 500) { state.from = a; state.to = b; setPreset(null); load(); } else { render(); }
    };
  }

  const tipEl = () => $("tip");
  function tip(ev, lane, e) {
    const lines = [`${fmtTime(e.time)}  ${e.type}`, `${lane.kind} ${lane.namespace}/${lane.name}`, e.summary];
    if (e.message) lines.push(e.message);
    if (e.note) lines.push(e.note);
    if (e.until) lines.push("may open at " + fmtTime(e.until));
    if (e.request) lines.push("KickRequest " + e.request);
    tipEl().textContent = lines.join("\n");
    tipEl().hidden = false;
    moveTip(ev);
  }
  function moveTip(ev) {
    tipEl().style.left = ev.clientX + 12 + "px";
    tipEl().style.top = ev.clientY + 12 + "px";
  }
  function hideTip() { tipEl().hidden = true; }

  async function showDetail(lane) {
    $("detail").hidden = false;
    $("detail-title").textContent = `${lane.kind} ${lane.namespace}/${lane.name}` + (lane.policy ? ` — KickPolicy ${lane.policy}` : "");
    const q = new URLSearchParams({ namespace: lane.namespace, kind: lane.kind, name: lane.name });
    const [tl, dag] = await Promise.all([
      fetch("/timeline?" + q).then((r) => (r.ok ? r.json() : { entries: [] })),
      fetch("/timeline/dag?" + new URLSearchParams({ namespace: lane.namespace })).then((r) => (r.ok ? r.json() : { nodes: [], edges: [] })),
    ]);
    const ol = $("detail-entries");
    ol.textContent = "";
    for (const e of tl.entries) {
      const li = h("li", "", undefined, ol);
      li.setAttribute("data-type", e.type);
      h("span", "t", fmtTime(e.time) + " ", li);
      h("b", "", e.type + " ", li);
      h("span", "", e.summary + (e.message && e.type !== "event" ? " — " + e.message : "") + (e.note ? "; " + e.note : ""), li);
    }
    if (!tl.entries.length) h("li", "", "nothing recorded in the history", ol);
    drawDAG(dag, lane);
    $("detail").scrollIntoView({ behavior: "smooth" });
  }

  // drawDAG lays the graph out in three columns: policies, workloads, sources.
  function drawDAG(dag, lane) {
    const svg = $("dag");
    svg.textContent = "";
    const cols = [[], [], []];
    for (const n of dag.nodes) cols[n.layer].push(n);
    const W = 170, H = 22, GAP = 8, COLX = [10, 230, 450];
    const pos = {};
    cols.forEach((c, i) => c.forEach((n, j) => { pos[n.id] = [COLX[i], 10 + j * (H + GAP)]; }));
    const rows = Math.max(1, ...cols.map((c) => c.length));
    for (const e of dag.edges) {
      const a = pos[e.from], b = pos[e.to];
      if (!a || !b) continue;
      const x1 = a[0] + W, y1 = a[1] + H / 2, x2 = b[0], y2 = b[1] + H / 2;
      el("path", { d: `M${x1},${y1} C${x1 + 25},${y1} ${x2 - 25},${y2} ${x2},${y2}`, class: "dagedge" }, svg);
    }
    for (const n of dag.nodes) {
      const [nx, ny] = pos[n.id];
      const focus = n.layer === 1 && n.kind === lane.kind && n.name === lane.name;
      const g = el("g", { class: `dagnode k-${n.kind}${focus ? " focus" : ""}`, "data-node": n.id }, svg);
      el("rect", { x: nx, y: ny, width: W, height: H, rx: 4 }, g);
      el("text", { x: nx + 6, y: ny + 15 }, g).textContent = `${n.kind}/${n.name}`.slice(0, 30);
    }
    svg.setAttribute("viewBox", `0 0 640 ${rows * (H + GAP) + 20}`);
    svg.setAttribute("height", rows * (H + GAP) + 20);
  }

  function setPreset(r) {
    for (const b of document.querySelectorAll("#presets button")) b.classList.toggle("on", b.dataset.range === r);
  }

  // LEGEND names the markers that are not an entry type.
  const LEGEND = { held: "held by a halt", hold: "held by a KickHold" };
  function legend() {
    const box = $("legend");
    for (const t of TYPES.concat(["halt", "held", "hold"])) {
      const s = h("span", "", undefined, box);
      const svg = el("svg", { width: 16, height: 16 }, s);
      marker(t, 8, 8, "marker m-" + t, svg);
      s.appendChild(document.createTextNode(" " + (LEGEND[t] || t)));
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    legend();
    setPreset(state.range);
    for (const b of document.querySelectorAll("#presets button")) {
      b.addEventListener("click", () => { state.range = b.dataset.range; state.from = state.to = null; setPreset(state.range); load(); });
    }
    $("filter").addEventListener("input", (ev) => { state.filter = ev.target.value; render(); });
    $("apply").addEventListener("click", () => {
      const a = Date.parse($("from").value), b = Date.parse($("to").value);
      if (a < b) { state.from = a; state.to = b; setPreset(null); load(); }
    });
    $("refresh").addEventListener("click", load);
    $("detail-close").addEventListener("click", () => { $("detail").hidden = true; });
    window.addEventListener("resize", render);
    let pending = false;
    window.addEventListener("scroll", () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; drawRows(); });
    }, { passive: true });
    const lanesSvg = $("lanes");
    lanesSvg.addEventListener("mouseover", (ev) => {
      const it = item(ev.target);
      if (it && it[1]) tip(ev, it[0], it[1]);
    });
    lanesSvg.addEventListener("mousemove", (ev) => { if (!tipEl().hidden) moveTip(ev); });
    lanesSvg.addEventListener("mouseout", (ev) => { if (item(ev.target)) hideTip(); });
    lanesSvg.addEventListener("click", (ev) => {
      const it = item(ev.target);
      if (it && !it[1]) showDetail(it[0]);
    });
    const params = new URLSearchParams(location.search);
    if (params.get("range")) { state.range = params.get("range"); setPreset(state.range); }
    if (params.get("filter")) { state.filter = $("filter").value = params.get("filter"); }
    const pFrom = Date.parse(params.get("from")), pTo = Date.parse(params.get("to"));
    if (pFrom < pTo) { state.from = pFrom; state.to = pTo; setPreset(null); }
    load();
    setInterval(() => { if (state.from === null) load(); }, 15000);
  });
})();
