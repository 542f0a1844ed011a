/* dpdk-shaper's dashboard: polls shaper-api (GET /v1/live, /v1/config)
 * once a second with the token, draws each port's last five minutes on
 * <canvas>, and sends changes through the API's own endpoints (PATCH,
 * PUT, DELETE a stage; POST /v1/batch for several ports at once; POST
 * /v1/links/P; POST /v1/ports/P/preset), lists GET /v1/presets, and
 * reads the stream of changes applied (GET /v1/events, Server-Sent
 * Events read through fetch: EventSource sends no token). Every change is parsed by the shaper: a refusal shows
 * its own error line and nothing changed. No library, nothing fetched
 * from anywhere but this server. */
"use strict";

const POLL_MS = 1000;
const WINDOW_S = 300;           // what the plots show
const TIMEOUT_MS = 4000;        // a request that takes longer failed
const CUT = 120;                // telemetry cuts strings at 128 bytes
const CLASS_EVERY = 10;         // polls between reads of the class texts
const TOKEN_KEY = "dpdk-shaper-api-token";
const COLORS = ["#175cd3", "#dc6803", "#079455", "#b42318", "#7a5af8",
                "#0e9384", "#c11574", "#667085"];

const $ = (sel, root) => (root || document).querySelector(sel);
let token = sessionStorage.getItem(TOKEN_KEY);
let ports = {};        // id -> {card, prev, hist, conf, classes}
let keys = [];         // the stages a port has (queue, tbf, netem...)
let down = null;       // why the shaper does not answer, or null
let lastConf = "";
let classNames = "";
let classTexts = {};   // class name -> "show class NAME" text
let timer = null;
let polls = 0;
let presets = null;    // [{name, summary}], read once connected
const EVENTS_KEPT = 50;         // rows the changes table keeps
let lastEvent = null;  // the last event id seen: a new stream resumes
let watching = null;   // the stream's AbortController

function el(tag, attrs, kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids || []) e.append(k);
  return e;
}

/* ---- numbers ---- */

function si(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return "-";
  const p = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [m, s] of p)
    if (Math.abs(v) >= m) return (v / m).toFixed(v / m >= 100 ? 0 : 2) +
      " " + s + unit;
  return (v >= 100 || v === 0 ? v.toFixed(0) : v.toFixed(2)) + " " + unit;
}

function ns(v) {
  if (v === null || v === undefined) return "-";
  if (v >= 1e9) return (v / 1e9).toFixed(2) + " s";
  if (v >= 1e6) return (v / 1e6).toFixed(2) + " ms";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + " \u00b5s";
  return v + " ns";
}

/* ---- the API ---- */

class HttpError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function api(method, path, body) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const init = { method, signal: ctl.signal, cache: "no-store",
                 headers: { Authorization: "Bearer " + token } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let r;
  try {
    r = await fetch(path, init);
  } catch (e) {
    throw new HttpError(0, "shaper-api does not answer");
  } finally {
    clearTimeout(t);
  }
  let obj = null;
  try { obj = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok)
    throw new HttpError(r.status, (obj && obj.error) || r.statusText);
  return obj;
}

/* ---- the notice: the shaper stopped, restarted, the token ---- */

function notice(text, kind) {
  const n = $("#notice");
  n.textContent = text;
  n.className = kind || "";
  n.hidden = !text;
  // news fades; a shaper that does not answer stays said
  if (kind === "info")
    setTimeout(() => { if (n.textContent === text) n.hidden = true; },
               15000);
}

function when() { return new Date().toLocaleTimeString(); }

function lost(e) {
  if (e.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    notice("shaper-api refused the token: enter the current one");
    login();
    return;
  }
  if (!down) down = when();
  const what = e.status === 0 ? "shaper-api does not answer"
    : "the shaper does not answer (" + e.message + ")";
  notice(what + " since " + down + ": retrying every second");
  $("#state").textContent = "disconnected";
  for (const p of Object.values(ports)) p.prev = null;
}

/* ---- one port's card ---- */

const FIGS = [["in_pps", "in"], ["in_bps", "in"], ["out_pps", "out"],
              ["out_bps", "out"], ["queued", "queue"], ["drops", "drops"]];
const PLOTS = [["bps", "bit/s in, out"], ["pps", "packets/s in, out"],
               ["queued", "queue depth (packets)"],
               ["drops", "drops/s by cause"],
               ["sojourn", "sojourn p50, p99, p99.9"],
               ["lateness", "lateness p50, p99, p99.9"]];

function card(id, all) {
  const c = el("section", { class: "port", id: "port-" + id });
  const h = el("h2", {}, [el("span", { text: "port " + id }),
    el("span", { class: "peer" }), el("span", { class: "link" })]);
  const up = el("button", { type: "button", "data-link": "up",
                            text: "link up" });
  const dn = el("button", { type: "button", "data-link": "down",
                            text: "link down" });
  up.onclick = () => link(id, true);
  dn.onclick = () => link(id, false);
  // a bare wire keeping the profile, and the profile back
  const wire = el("span", { class: "wire", hidden: "" , text: "disabled" });
  const off = el("button", { type: "button", "data-wire": "disable",
                             text: "disable", title: "a bare wire: no " +
                             "stage, the profile kept" });
  const on = el("button", { type: "button", "data-wire": "enable",
                            text: "enable", title: "the profile back" });
  off.onclick = () => toggle(id, "disable");
  on.onclick = () => toggle(id, "enable");
  h.append(wire, dn, up, off, on);
  const figs = el("div", { class: "figs" });
  for (const [f, label] of FIGS)
    figs.append(el("div", { class: "fig" }, [
      el("span", { text: label + (f.endsWith("pps") ? " pps" :
        f.endsWith("bps") ? " bit/s" : f === "drops" ? " /s" : "") }),
      el("b", { "data-fig": f, text: "-" })]));
  const plots = el("div", { class: "plots" });
  for (const [p, label] of PLOTS)
    plots.append(el("figure", {}, [el("figcaption", { text: label }),
                                   el("canvas", { "data-plot": p })]));
  const tables = el("div", { class: "tables" });
  const prof = el("pre", { class: "profile", text: "..." });
  c.append(h, figs, plots, tables, el("h3", { text: "profile" }), prof,
           editor(id, all), preset_picker(id));
  return { id, card: c, prev: null, hist: [], figs, tables, prof };
}

function editor(id, all) {
  const f = el("form", { class: "editor", "data-port": id });
  const sel = el("select", { name: "key", "aria-label": "stage" });
  const text = el("input", { name: "text", type: "text",
    placeholder: "delay 20ms loss 1%", "aria-label": "profile words",
    autocomplete: "off", spellcheck: "false" });
  const onto = el("span", { class: "ports", text: "ports " });
  for (const q of all) {
    const b = el("input", { type: "checkbox", name: "port", value: q });
    if (q === id) b.checked = true;
    onto.append(el("label", {}, [b, " " + q]));
  }
  const btn = (op, label, title) => el("button", { type: op === "update" ?
    "submit" : "button", "data-op": op, text: label, title });
  const upd = btn("update", "update", "change only the words given");
  const set = btn("set", "replace", "the words given, the rest default");
  const clr = btn("clear", "off", "the stage off (a queue: its defaults)");
  set.onclick = () => apply(f, "set");
  clr.onclick = () => apply(f, "clear");
  f.onsubmit = (ev) => { ev.preventDefault(); apply(f, "update"); };
  f.append(sel, text, upd, set, clr, onto,
           el("p", { class: "err", role: "status" }),
           el("p", { class: "ok" }));
  return f;
}

/* A preset for the port (config/presets: `show presets`). */
function preset_picker(id) {
  const d = el("div", { class: "presets" });
  const sel = el("select", { name: "preset", "aria-label": "preset" });
  const go = el("button", { type: "button", "data-op": "preset",
                            text: "apply preset" });
  go.onclick = () => set_preset(id, sel.value);
  d.append(el("span", { text: "preset" }), sel, go);
  fill_presets(d);
  return d;
}

function fill_presets(d) {
  const sel = $("select[name=preset]", d);
  if (!presets || sel.options.length) return;
  sel.replaceChildren(...presets.map((p) => el("option", { value: p.name,
    text: p.name, title: p.summary })));
}

async function set_preset(port, name) {
  const f = $("form", ports[port].card);
  $(".err", f).textContent = $(".ok", f).textContent = "";
  try {
    const r = await api("POST", "/v1/ports/" + port + "/preset", { name });
    $(".ok", f).textContent = (r.output || "ok").trim();
    lastConf = "";
    poll(true);
  } catch (e) {
    $(".err", f).textContent = e.message;
  }
}

function fill_keys(p) {
  const sel = $("select[name=key]", p.card);
  const want = keys.concat(Object.keys(p.classes || {}).map(
    (n) => "class " + n));
  const have = Array.from(sel.options).map((o) => o.value);
  if (want.join() === have.join()) return;
  const cur = sel.value || "netem";
  sel.replaceChildren(...want.map((k) => el("option", { value: k,
                                                       text: k })));
  sel.value = want.includes(cur) ? cur : want[0];
}

/* ---- changes ---- */

async function apply(f, op) {
  const port = Number(f.dataset.port);
  const key = f.key.value;
  const text = f.text.value.trim();
  const onto = Array.from(f.querySelectorAll("input[name=port]:checked"))
    .map((b) => Number(b.value));
  const err = $(".err", f), ok = $(".ok", f);
  err.textContent = ok.textContent = "";
  if (op !== "clear" && !text) {
    err.textContent = "give the words to set (e.g. delay 20ms)";
    return;
  }
  const method = { update: "PATCH", set: "PUT", clear: "DELETE" }[op];
  try {
    let r;
    if (key.startsWith("class ")) {
      const path = "/v1/classes/" + encodeURIComponent(key.slice(6));
      r = await api(method, path, op === "clear" ? undefined : { text });
    } else if (onto.length > 1 || (onto.length === 1 && onto[0] !== port)) {
      // several ports: one publication, all or nothing
      r = await api("POST", "/v1/batch", onto.map((q) => op === "clear" ?
        { op, port: q, key } : { op, port: q, key, text }));
    } else {
      r = await api(method, "/v1/ports/" + port + "/" + key,
                    op === "clear" ? undefined : { text });
    }
    ok.textContent = (r.output || "ok").trim();
    lastConf = "";                 // show the new profile at once
    classNames = "";
    poll(true);
  } catch (e) {
    err.textContent = e.status ? e.message : "not sent: " + e.message;
  }
}

async function link(port, up) {
  const f = $("form", ports[port].card);
  $(".err", f).textContent = $(".ok", f).textContent = "";
  try {
    const r = await api("POST", "/v1/links/" + port, { up });
    $(".ok", f).textContent = r.output.trim();
  } catch (e) {
    $(".err", f).textContent = e.message;
  }
}

async function toggle(port, what) {
  const f = $("form", ports[port].card);
  $(".err", f).textContent = $(".ok", f).textContent = "";
  try {
    const r = await api("POST", "/v1/ports/" + port + "/" + what);
    $(".ok", f).textContent = (r.output || "ok").trim();
    lastConf = "";
    poll(true);
  } catch (e) {
    $(".err", f).textContent = e.message;
  }
}

/* ---- figures ---- */

function rates(p, cur, t) {
  const prev = p.prev;
  p.prev = { t, cur };
  if (!prev) return null;
  const dt = t - prev.t;
  const o = prev.cur;
  if (dt <= 0 || cur.rx_packets < o.rx_packets ||
      cur.tx_packets < o.tx_packets) {
    // counters back to zero: a `clear stats`, or a new shaper
    notice("the shaper's counters started again at " + when() +
           " (restarted, or clear stats)", "info");
    p.hist = [];
    return null;
  }
  const d = {};
  for (const [c, v] of Object.entries(cur.drops || {}))
    d[c] = Math.max(0, v - ((o.drops || {})[c] || 0)) / dt;
  const lat = (w) => { const h = (cur.latency || {})[w] || {};
                       return [h.p50, h.p99, h.p99_9]; };
  return {
    t, in_pps: (cur.rx_packets - o.rx_packets) / dt,
    in_bps: (cur.rx_bytes - o.rx_bytes) * 8 / dt,
    out_pps: (cur.tx_packets - o.tx_packets) / dt,
    out_bps: (cur.tx_bytes - o.tx_bytes) * 8 / dt,
    queued: cur.queued, drops: d,
    sojourn: lat("sojourn"), lateness: lat("lateness"),
  };
}

function show(p, cur, s, t) {
  const ln = $(".link", p.card);
  ln.textContent = "link " + (cur.link || (cur.link_up ? "up" : "down"));
  ln.className = "link" + ((cur.link || "") === "down" ? " down" : "");
  if (s) {
    p.hist.push(s);
    while (p.hist.length && p.hist[0].t < t - WINDOW_S) p.hist.shift();
    const tot = Object.values(s.drops).reduce((a, b) => a + b, 0);
    const v = { in_pps: si(s.in_pps, "pps"), in_bps: si(s.in_bps, "bit/s"),
      out_pps: si(s.out_pps, "pps"), out_bps: si(s.out_bps, "bit/s"),
      queued: String(cur.queued), drops: si(tot, "") };
    const raw = { in_pps: s.in_pps, in_bps: s.in_bps, out_pps: s.out_pps,
      out_bps: s.out_bps, queued: cur.queued, drops: tot };
    for (const [f] of FIGS) {
      const b = $("[data-fig=" + f + "]", p.figs);
      b.textContent = v[f];
      b.dataset.value = raw[f];
    }
  }
  tables(p, cur, s);
  draw(p, t);
}

function table(head, rows) {
  return el("table", {}, [el("tr", {}, head.map((h) => el("th",
    { text: h }))), ...rows.map((r) => el("tr", {}, r.map((c) =>
      el("td", { text: String(c) }))))]);
}

function tables(p, cur, s) {
  const out = [];
  const drops = Object.entries(cur.drops || {}).filter(([, v]) => v > 0);
  if (drops.length)
    out.push(table(["drops", "total", "/s"], drops.map(([c, v]) =>
      [c, v, s ? si(s.drops[c], "") : "-"])));
  const lat = cur.latency || {};
  out.push(table(["latency", "p50", "p99", "p99.9", "max", "count"],
    ["sojourn", "lateness"].map((w) => { const h = lat[w] || {};
      return [w, ns(h.p50), ns(h.p99), ns(h.p99_9), ns(h.max),
              h.count === undefined ? "-" : h.count]; })));
  const sh = Object.values(cur.shards || {});
  if (sh.length > 1)
    out.push(table(["shard", "lcore", "tx", "queued", "dropped",
                    "sojourn p50", "p99"], sh.map((q) => [q.queue, q.lcore,
      q.tx_packets, q.queued, q.dropped, ns(q.sojourn_p50_ns),
      ns(q.sojourn_p99_ns)])));
  const cl = Object.entries(cur.classes || {});
  if (cl.length)
    out.push(table(["class", "in", "out", "bytes out", "queued", "dropped",
                    "sojourn avg", "p99"], cl.map(([n, c]) => [n,
      c.in_packets, c.packets, c.bytes, c.queued, c.dropped,
      ns(c.sojourn_avg_ns), ns(c.sojourn_p99_ns)])));
  p.tables.replaceChildren(...out);
}

/* ---- plots: the last five minutes on a canvas ---- */

function draw(p, now) {
  const series = {
    bps: [["in", (s) => s.in_bps], ["out", (s) => s.out_bps]],
    pps: [["in", (s) => s.in_pps], ["out", (s) => s.out_pps]],
    queued: [["queued", (s) => s.queued]],
    sojourn: [0, 1, 2].map((i) => [["p50", "p99", "p99.9"][i],
                                   (s) => s.sojourn[i]]),
    lateness: [0, 1, 2].map((i) => [["p50", "p99", "p99.9"][i],
                                    (s) => s.lateness[i]]),
  };
  // the causes that dropped anything in the window
  const causes = new Set();
  for (const s of p.hist)
    for (const [c, v] of Object.entries(s.drops)) if (v > 0) causes.add(c);
  series.drops = Array.from(causes).map((c) => [c, (s) => s.drops[c]]);
  for (const cv of p.card.querySelectorAll("canvas")) {
    const k = cv.dataset.plot;
    plot(cv, p.hist, series[k], now,
         k === "sojourn" || k === "lateness" ? ns : (v) => si(v, ""));
  }
}

function plot(cv, hist, lines, now, fmt) {
  const dpr = window.devicePixelRatio || 1;
  const w = cv.clientWidth, h = cv.clientHeight;
  if (!w || !h) return;
  if (cv.width !== Math.round(w * dpr)) cv.width = Math.round(w * dpr);
  if (cv.height !== Math.round(h * dpr)) cv.height = Math.round(h * dpr);
  const g = cv.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = "10px system-ui, sans-serif";
  let max = 0;
  for (const [, f] of lines)
    for (const s of hist) { const v = f(s); if (v > max) max = v; }
  max = max > 0 ? max * 1.1 : 1;
  const top = 12, bot = h - 12;
  const x = (t) => w * (1 - (now - t) / WINDOW_S);
  const y = (v) => bot - (bot - top) * v / max;
  g.strokeStyle = "#d9dde3";
  g.beginPath(); g.moveTo(0, bot + 0.5); g.lineTo(w, bot + 0.5); g.stroke();
  g.fillStyle = "#667085";
  g.fillText(fmt(max), 2, 10);
  g.fillText("-5 min", 2, h - 2);
  g.fillText("now", w - 20, h - 2);
  lines.forEach(([name, f], i) => {
    const col = COLORS[i % COLORS.length];
    g.strokeStyle = col;
    g.lineWidth = 1.5;
    g.beginPath();
    let pen = false;
    for (const s of hist) {
      const v = f(s);
      if (v === undefined || v === null || !isFinite(v)) { pen = false;
                                                            continue; }
      if (pen) g.lineTo(x(s.t), y(v)); else g.moveTo(x(s.t), y(v));
      pen = true;
    }
    g.stroke();
    g.fillStyle = col;
    g.fillText(name, w - 6 - 60 * (lines.length - i), 10);
  });
}

/* ---- profiles ---- */

async function profiles(conf) {
  const text = JSON.stringify(conf);
  if (text === lastConf) return;
  lastConf = text;
  const ids = Object.keys(conf).filter((k) => /^\d+$/.test(k));
  keys = Object.keys(conf[ids[0]] || {}).filter((k) => k !== "peer" &&
                                                 k !== "disabled");
  for (const id of ids) {
    const p = ports[id];
    if (!p) continue;
    $(".peer", p.card).textContent = "\u2192 peer " + conf[id].peer;
    $(".wire", p.card).hidden = !Number(conf[id].disabled);
    const lines = [];
    for (const k of keys) {
      let v = conf[id][k];
      if (v.length >= CUT) {
        // telemetry cut it: the whole text from `show`
        try {
          const r = await api("GET", "/v1/ports/" + id + "/" + k);
          v = (k === "queue" && r.kind ? r.kind + " " : "") + r.text;
        } catch (e) { /* the cut text, then */ }
      }
      lines.push(k + ": " + v);
    }
    p.conf = lines;
    fill_keys(p);
    render_profile(p);
  }
}

async function classes(live) {
  const names = new Set();
  for (const v of Object.values(live.ports))
    for (const n of Object.keys(v.classes || {})) names.add(n);
  const all = Array.from(names).sort().join(" ");
  if (all === classNames) return;
  classNames = all;
  classTexts = {};
  for (const n of names) {
    try {
      classTexts[n] = (await api("GET", "/v1/classes/" +
                                 encodeURIComponent(n))).text;
    } catch (e) { /* gone meanwhile */ }
  }
  for (const p of Object.values(ports)) render_profile(p);
}

/* A class's stage lines on this port, from `show class NAME`. */
function class_lines(name, port) {
  const out = [];
  let mine = false;
  for (const l of (classTexts[name] || "").split("\n")) {
    const m = /^port (\d+) class \S+: (.*)$/.exec(l);
    if (m) { mine = m[1] === String(port); if (mine) out.push(m[2]); }
    else if (mine && /^ {2}(queue|tbf|netem|police|trace):/.test(l))
      out.push(l.trim());
  }
  return out;
}

function render_profile(p) {
  const lines = (p.conf || []).slice();
  for (const n of Object.keys(p.classes || {}).sort()) {
    lines.push("class " + n + ":");
    for (const l of class_lines(n, p.id)) lines.push("  " + l);
  }
  p.prof.textContent = lines.join("\n");
}

/* ---- the loop ---- */

async function poll(once) {
  if (!token) return;
  if (!once) clearTimeout(timer);
  try {
    const [live, conf] = await Promise.all([api("GET", "/v1/live"),
                                            api("GET", "/v1/config")]);
    const ids = Object.keys(live.ports).sort((a, b) => a - b);
    if (ids.join() !== Object.keys(ports).sort((a, b) => a - b).join()) {
      ports = {};
      lastConf = classNames = "";
      $("#ports").replaceChildren();
      for (const id of ids) {
        ports[id] = card(Number(id), ids.map(Number));
        $("#ports").append(ports[id].card);
      }
    }
    if (down) {
      notice("the shaper answers again (since " + when() + ")", "info");
      down = null;
    }
    $("#state").textContent = "connected: " + ids.length + " port" +
      (ids.length === 1 ? "" : "s") + ", forwarding " +
      ((conf.global || {}).forwarding || "?");
    for (const id of ids) {
      const p = ports[id];
      p.classes = live.ports[id].classes || {};
      if (!once) show(p, live.ports[id], rates(p, live.ports[id], live.time),
                      live.time);
    }
    if (presets === null) {
      try { presets = (await api("GET", "/v1/presets")).presets || []; }
      catch (e) { presets = []; }
    }
    for (const p of Object.values(ports)) fill_presets(p.card);
    if (!watching) watch();
    await profiles(conf);
    // a class changed elsewhere (dpdk-shaper-ctl) shows too
    if (!once && ++polls % CLASS_EVERY === 0) classNames = "";
    await classes(live);
    for (const p of Object.values(ports)) fill_keys(p);
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;
    lost(e);
  } finally {
    if (!once && token) timer = setTimeout(poll, POLL_MS);
  }
}

/* ---- the changes applied: GET /v1/events ---- */

function event_row(ev) {
  const rows = $("#event-rows");
  const t = (ev.wall || "").replace("T", " ").replace(/\.\d+Z$/, "Z");
  rows.prepend(el("tr", { "data-event": ev.id }, [
    el("td", { text: String(ev.id) }), el("td", { text: t }),
    el("td", { text: ev.source }),
    el("td", { text: ev.port === null ? "all" : String(ev.port) }),
    el("td", { text: ev.what }), el("td", { text: ev.old }),
    el("td", { text: ev.new })]));
  while (rows.children.length > EVENTS_KEPT) rows.lastChild.remove();
  lastEvent = ev.id;
}

/* One SSE stream at a time, read through fetch; when it ends (the
 * shaper or the API stopped) the next poll that succeeds starts another
 * after the last id seen. */
async function watch() {
  const ctl = new AbortController();
  watching = ctl;
  const st = $("#events-state");
  let buf = "";
  try {
    const r = await fetch("/v1/events" + (lastEvent === null ? "" :
      "?since=" + lastEvent), { headers: { Authorization: "Bearer " +
      token }, cache: "no-store", signal: ctl.signal });
    if (!r.ok || !r.body) throw new Error(r.statusText || "no stream");
    st.textContent = "watching";
    const rd = r.body.getReader();
    const dec = new TextDecoder();
    for (;;) {
      const { value, done } = await rd.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const msg = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = msg.split("\n").filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6)).join("\n");
        if (data) {
          try { event_row(JSON.parse(data)); } catch (e) { /* not one */ }
        }
      }
    }
  } catch (e) { /* refused, or the connection went */ }
  st.textContent = "not watching (reconnects with the figures)";
  if (watching === ctl) watching = null;
}

function login() {
  clearTimeout(timer);
  $("#login").hidden = false;
  $("#forget").hidden = true;
  $("#state").textContent = "no token";
  $("#token").focus();
}

function start() {
  $("#login").hidden = true;
  $("#forget").hidden = false;
  notice("");
  poll();
}

$("#login").onsubmit = (ev) => {
  ev.preventDefault();
  const t = $("#token").value.trim();
  if (!t) return;
  token = t;
  sessionStorage.setItem(TOKEN_KEY, t);
  $("#token").value = "";
  start();
};
$("#forget").onclick = () => {
  if (watching) watching.abort();
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  login();
};
if (token) start(); else login();
