// plan-opt's page: the spec in an editor (checked by POST /validate as you type, an
// error marked at its line), the plan solve chooses and why (POST /solve), sliders that
// move the latency targets and re-solve, and the Pareto frontier of cost against TPOT
// (POST /pareto). No build step and nothing fetched from elsewhere: plain DOM and SVG.
"use strict";

const DEFAULT_SPEC = `# A chat assistant on Llama-3.1-70B (specs/chat-llama70b.yaml)
model: llama-3.1-70b
workload:
  users: 96
  context_tokens: 8192
  prompt_tokens: 2048
sla:
  max_ttft: 1s
  max_tpot: 50ms
search:
  gpus: [all]
  tp: [1, 2, 4, 8]
  weights: [bf16, fp8]
  kv_cache: [bf16, fp8]
objective: min_cost
`;

const $ = (id) => document.getElementById(id);
const specBox = $("spec");
// base: each slider's target in the spec itself; paths: the field each slider sets (the
// users form's sla.max_tpot, a rate spec's sla.tpot.p90); pending: slider positions a
// shared link carries, applied when its first solve answers
const state = { base: null, paths: {}, pending: {}, sets: {}, seq: 0, lastPlan: null, last: null };

function esc(text) {
  return String(text ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

function b64encode(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  bytes.forEach((b) => (bin += String.fromCharCode(b)));
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function b64decode(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

function seconds(s) {
  if (s === null || s === undefined) return "—";
  const a = Math.abs(s);
  if (a >= 1) return `${s.toFixed(2)} s`;
  if (a >= 1e-3) return `${(s * 1e3).toFixed(1)} ms`;
  return `${(s * 1e6).toFixed(1)} µs`;
}

function cell(value, unit) {
  if (value === null || value === undefined) return "—";
  if (unit === "s") return seconds(value);
  if (unit === "bytes") return `${(value / 1e9).toFixed(2)} GB`;
  if (unit === "usd_per_hour") return `$${value.toFixed(2)}/h`;
  if (unit === "usd") return `$${Math.round(value).toLocaleString()}`;
  return Number(value).toLocaleString();
}

function money(objective, value) {
  if (value === null || value === undefined) return "—";
  if (objective === "min_gpus") return `${value} GPUs`;
  if (objective === "min_tpot") return seconds(value);
  if (objective === "min_purchase") return `$${Math.round(value).toLocaleString()}`;
  return `$${value.toFixed(2)}/h`;
}

function table(headers, rows) {
  // in a box of its own that scrolls sideways, so a wide table never widens the page
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td${c.num ? ' class="num"' : ""}>${c.html ?? esc(c.text ?? c)}</td>`).join("")}</tr>`).join("");
  return `<div class="scroll"><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

function query(extra) {
  const params = new URLSearchParams(extra || {});
  for (const [path, value] of Object.entries(state.sets)) params.append("set", `${path}=${value}`);
  const q = params.toString();
  return q ? `?${q}` : "";
}

async function post(path, extra) {
  const r = await fetch(path + query(extra), { method: "POST", body: specBox.value, headers: { "content-type": "application/yaml" } });
  const data = await r.json();
  return { ok: r.ok, status: r.status, data };
}

// ------------------------------------------------------------------ the editor

function gutter(bad) {
  const n = specBox.value.split("\n").length;
  $("gutter").innerHTML = Array.from({ length: n }, (_, i) => (i + 1 === bad ? `<span class="bad">${i + 1}</span>` : `${i + 1}`)).join("\n");
  $("gutter").scrollTop = specBox.scrollTop;
}

function showError(err) {
  const status = $("status");
  status.className = "bad";
  status.textContent = err.line ? `line ${err.line}: ${err.message}` : err.message;
  gutter(err.line);
}

// the link: the spec and the sliders (their positions and the targets they set), so
// that it opens on the same plan: #spec=…&set=sla.max_tpot=40.000ms&tpot=700
function updateLink() {
  const params = new URLSearchParams({ spec: b64encode(specBox.value) });
  for (const [path, value] of Object.entries(state.sets)) params.append("set", `${path}=${value}`);
  if (state.base) for (const name of Object.keys(state.paths)) if (state.paths[name] in state.sets) params.append(name, $(name).value);
  $("link").href = `#${params}`;
}

function readLink() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (!params.get("spec")) return false;
  specBox.value = b64decode(params.get("spec"));
  for (const item of params.getAll("set")) {
    const at = item.indexOf("=");
    if (at > 0) state.sets[item.slice(0, at)] = item.slice(at + 1);
  }
  for (const name of ["ttft", "tpot"]) if (params.has(name)) state.pending[name] = Number(params.get(name));
  return true;
}

let validateTimer = null;
function edited() {
  gutter(null);
  state.sets = {};
  state.base = null;
  state.pending = {};
  updateLink();
  clearTimeout(validateTimer);
  validateTimer = setTimeout(validate, 300);
}

async function validate() {
  const seq = ++state.seq;
  const r = await post("/validate");
  if (seq !== state.seq) return;
  if (r.ok) {
    $("status").className = "ok";
    $("status").textContent = "✓ the spec reads (press Solve)";
    gutter(null);
  } else showError(r.data.error);
}

// ------------------------------------------------------------------ the plan

// why there is no plan, in the answer's own terms: the targets that conflict, else the
// reason it gives, else that no searched GPU runs the model
function noPlanReason(out) {
  if (out.conflict && out.conflict.length) return `these targets cannot hold together: ${out.conflict.join(", ")}`;
  if (out.traffic_unmet) return out.traffic_unmet;
  if (out.reason) return out.reason;
  return "no searched GPU can run it";
}

// an answer without a plan: the reason, and nothing left over from the plan before
function renderNoPlan(out) {
  let html = `<p class="headline" id="no-plan">No plan: ${esc(out.status)}</p><p id="no-plan-reason">${esc(noPlanReason(out))}</p>`;
  if (out.relaxations && out.relaxations.length) {
    html += `<h2>Nearest targets that hold</h2>` + table(["target", "nearest", "plan"], out.relaxations.map((x) => [x.target, x.note, x.plan || "—"]));
  }
  $("plan").innerHTML = html;
  $("details").innerHTML = "";
  clearChart();
  state.lastPlan = null;
}

function renderPlan(out, quick) {
  const pl = out.plan;
  if (!pl) return renderNoPlan(out);
  const split = pl.parallelism === "dp_ep" ? `DP attention × EP ${pl.tp}` : pl.parallelism === "tp_ep" ? `TP ${pl.tp} × EP ${pl.tp}` : `TP ${pl.tp}${pl.pp > 1 ? ` × PP ${pl.pp}` : ""}`;
  const pool = pl.prefill_pool;
  let html = `<p class="headline" id="plan-line">${pool ? `${pool.replicas} × ${esc(pool.gpu_display_name)} TP ${pool.tp} prefill + ` : ""}${pl.replicas} × ${esc(pl.gpu_display_name)}, ${split}, ${esc(pl.weights)}/${esc(pl.kv_cache)} — ${pl.gpus} GPUs, $${pl.cost_usd_per_hour.toFixed(2)}/hour</p>`;
  html += `<p>${pl.batch_per_replica} users per replica · TPOT ${seconds(pl.tpot_s)} · TTFT ${seconds(pl.ttft_s)} · ${Math.round(pl.tokens_per_s).toLocaleString()} tokens/s · ${esc(out.status)}${quick ? ' <span class="quick">(the plan only: the explanation follows when the slider stops)</span>' : ""}</p>`;
  html += table(
    ["constraint", "value", "limit", "slack", "note"],
    out.constraints.map((c) => [c.name, { text: cell(c.value, c.unit), num: true }, { text: cell(c.limit, c.unit), num: true }, { html: c.slack !== null && c.slack < 0 ? `<span class="negative">${esc(cell(c.slack, c.unit))}</span>` : esc(cell(c.slack, c.unit)), num: true }, c.note])
  );
  $("plan").innerHTML = html;
  state.lastPlan = pl;
}

function renderDetails(out) {
  const pl = out.plan;
  if (!pl || !out.explained) {
    $("details").innerHTML = "";
    return;
  }
  const items = [`batch per replica capped by ${esc(pl.batch_capped_by)}`];
  if (pl.replicas_forced_by) items.push(`replicas forced by ${esc(pl.replicas_forced_by)}`);
  items.push(out.binding_targets.length ? `targets that bind (relaxing them lowers the optimum): ${esc(out.binding_targets.join(", "))}` : "no target binds");
  if (out.tight_targets.length) items.push(`little headroom: ${esc(out.tight_targets.join(", "))}`);
  if (out.serving) items.push(`serving: ${esc(out.serving.reason)}`);
  let html = `<h2>What decided it</h2><ul id="decided">${items.map((x) => `<li>${x}</li>`).join("")}</ul>`;
  if (out.sensitivity.length) {
    html += `<h2>The price of each target <small>(re-solved)</small></h2>`;
    html += table(
      ["target", "change", "plan", "objective", "Δ"],
      out.sensitivity.map((x) => [x.target, x.change, x.plan || "no plan", { text: money(out.objective, x.objective), num: true }, { text: x.delta === null ? "—" : (x.delta >= 0 ? "+" : "−") + money(out.objective, Math.abs(x.delta)), num: true }])
    );
  }
  if (out.runners_up.length) {
    html += `<h2>Runners-up <small>(the best plan on each other GPU)</small></h2>`;
    html += table(
      ["gpu", "plan", "objective", "why not"],
      out.runners_up.slice(0, 12).map((x) => [x.device, x.plan || "—", { text: money(out.objective, x.objective), num: true }, x.plan ? "" : x.reason])
    );
  }
  $("details").innerHTML = html;
}


// ------------------------------------------------------------------ sliders

// The field each slider sets. A rate spec holds its targets at a percentile
// (sla.tpot: {p90: 50ms}) and refuses sla.max_tpot; the solve's traffic section names
// each target's percentile. An answer without a plan has no traffic section: then the
// spec text says whether it is a rate spec and which percentile each target names.
function targetPaths(out) {
  const paths = { ttft: "sla.max_ttft", tpot: "sla.max_tpot" };
  const targets = out.traffic && out.traffic.targets;
  if (targets) {
    for (const t of targets) {
      const name = t.target.replace(/^max_/, "");
      if (name in paths && t.percentile) paths[name] = `sla.${name}.p${Math.round(t.percentile)}`;
    }
  } else if (/(^|[\s{,"'])requests_per_s["']?\s*:/m.test(specBox.value)) {
    for (const name of Object.keys(paths)) {
      const m = specBox.value.match(new RegExp(`(^|[\\s{,"'])${name}["']?\\s*:\\s*\\{?\\s*["']?(p\\d+)`, "m"));
      paths[name] = m ? `sla.${name}.${m[2]}` : null;
    }
  }
  return paths;
}

function sliderValue(name) {
  // 0 … 1000 on a log scale from a quarter to four times the spec's own target
  return (state.base[name] * Math.pow(16, $(name).value / 1000)) / 4;
}

function setSliders(out) {
  const now = { ttft: out.spec.max_ttft_s, tpot: out.spec.max_tpot_s };
  if (state.base || (!now.ttft && !now.tpot)) return;
  state.paths = targetPaths(out);
  state.base = {};
  $("sliders").hidden = false;
  for (const name of Object.keys(now)) {
    const input = $(name);
    const usable = Boolean(now[name] && state.paths[name]);
    // a link's position with the target it set gives back the spec's own target
    const position = usable && state.paths[name] in state.sets && name in state.pending ? state.pending[name] : 500;
    state.base[name] = usable ? (now[name] * 4) / Math.pow(16, position / 1000) : null;
    input.disabled = !usable;
    input.value = position;
    $(`${name}-value`).textContent = usable ? seconds(now[name]) : "no target";
  }
  state.pending = {};
  updateLink();
}

let slideTimer = null;
function slid(name, final) {
  const v = sliderValue(name);
  $(`${name}-value`).textContent = seconds(v);
  state.sets[state.paths[name]] = `${(v * 1e3).toFixed(3)}ms`;
  updateLink();
  if (!final) markStale();
  clearTimeout(slideTimer);
  slideTimer = setTimeout(() => (final ? solve() : quickSolve()), final ? 0 : 120);
}

// while a slider moves, the explanation and the chart belong to the plan before it
function markStale() {
  $("details").hidden = true;
  $("pareto").classList.add("stale");
  setDownloads(null);  // they would hold the plan before
  $("deploy").hidden = true;
}

// ------------------------------------------------------------------ solving

function showOutcome(out) {
  const status = $("status");
  if (out.plan) {
    status.className = "ok";
    status.textContent = `✓ solved: ${out.status} over ${out.shapes_searched} shapes on ${out.devices_searched} GPUs`;
  } else {
    status.className = "warn";
    status.textContent = `✗ no plan (${out.status}): ${noPlanReason(out)}`;
  }
  gutter(null);
}

async function quickSolve() {
  const seq = ++state.seq;
  const r = await post("/solve", { explain: "false" });
  if (seq !== state.seq) return;
  if (!r.ok) return showError(r.data.error);
  if (!r.data.plan) showOutcome(r.data);
  renderPlan(r.data, true);
  renderCompare(r.data);  // compare.js
}

async function solve() {
  clearTimeout(validateTimer);  // a check still waiting would discard this answer
  const seq = ++state.seq;
  $("solve").disabled = true;
  $("status").className = "";
  $("status").textContent = "solving…";
  try {
    const r = await post("/solve");
    if (seq !== state.seq) return;
    if (!r.ok) return showError(r.data.error);
    state.last = r.data;
    showOutcome(r.data);
    renderPlan(r.data, false);
    renderDetails(r.data);
    renderCompare(r.data);
    setDownloads(r.data);
    $("details").hidden = false;
    setSliders(r.data);
    if (r.data.plan) await Promise.all([pareto(seq), showDeploy(seq)]);
    else $("deploy").hidden = true;
  } finally {
    $("solve").disabled = false;
  }
}

async function pareto(seq) {
  const r = await post("/pareto", { axes: "tpot" });
  if (seq !== state.seq) return;
  if (!r.ok || !r.data.tpot) return clearChart();
  drawChart(r.data.tpot.points, state.lastPlan);
}

// ------------------------------------------------------------------ start

const opened = readLink();
if (!opened) specBox.value = DEFAULT_SPEC;
specBox.addEventListener("input", edited);
specBox.addEventListener("scroll", () => ($("gutter").scrollTop = specBox.scrollTop));
$("solve").addEventListener("click", solve);
for (const name of ["ttft", "tpot"]) {
  $(name).addEventListener("input", () => slid(name, false));
  $(name).addEventListener("change", () => slid(name, true));
}
updateLink();
gutter(null);
if (opened) solve();  // a shared link opens on its plan
else validate();
