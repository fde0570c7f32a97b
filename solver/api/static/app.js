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
const state = { base: null, sets: {}, seq: 0, lastPlan: null };

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
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  const body = rows.map((r) => `<tr>${r.map((c) => `<td${c.num ? ' class="num"' : ""}>${c.html ?? esc(c.text ?? c)}</td>`).join("")}</tr>`).join("");
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
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

let validateTimer = null;
function edited() {
  gutter(null);
  $("link").href = `#spec=${b64encode(specBox.value)}`;
  state.sets = {};
  state.base = null;
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

function renderPlan(out, quick) {
  const pl = out.plan;
  if (!pl) {
    const why = out.conflict && out.conflict.length ? `these targets cannot hold together: ${out.conflict.join(", ")}` : "no searched GPU can run it";
    $("plan").innerHTML = `<p class="headline">No plan</p><p>${esc(why)}</p>`;
    if (out.relaxations && out.relaxations.length) {
      $("plan").innerHTML += table(["target", "nearest", "plan"], out.relaxations.map((x) => [x.target, x.note, x.plan || "—"]));
    }
    return;
  }
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

const SLIDERS = { ttft: "sla.max_ttft", tpot: "sla.max_tpot" };

function sliderValue(name) {
  // 0 … 1000 on a log scale from a quarter to four times the spec's own target
  const base = state.base[name];
  return base * Math.pow(16, $(name).value / 1000) / 4;
}

function setSliders(out) {
  const base = { ttft: out.spec.max_ttft_s, tpot: out.spec.max_tpot_s };
  if (state.base || (!base.ttft && !base.tpot)) return;
  state.base = base;
  $("sliders").hidden = false;
  for (const name of Object.keys(SLIDERS)) {
    const input = $(name);
    input.disabled = !base[name];
    input.value = 500;
    $(`${name}-value`).textContent = base[name] ? seconds(base[name]) : "no target";
  }
}

let slideTimer = null;
function slid(name, final) {
  const v = sliderValue(name);
  $(`${name}-value`).textContent = seconds(v);
  state.sets[SLIDERS[name]] = `${(v * 1e3).toFixed(3)}ms`;
  clearTimeout(slideTimer);
  slideTimer = setTimeout(() => (final ? solve() : quickSolve()), final ? 0 : 120);
}

// ------------------------------------------------------------------ solving

async function quickSolve() {
  const seq = ++state.seq;
  const r = await post("/solve", { explain: "false" });
  if (seq !== state.seq) return;
  if (!r.ok) return showError(r.data.error);
  renderPlan(r.data, true);
}

async function solve() {
  const seq = ++state.seq;
  $("solve").disabled = true;
  $("status").className = "";
  $("status").textContent = "solving…";
  try {
    const r = await post("/solve");
    if (seq !== state.seq) return;
    if (!r.ok) return showError(r.data.error);
    $("status").className = "ok";
    $("status").textContent = `✓ solved: ${r.data.status} over ${r.data.shapes_searched} shapes on ${r.data.devices_searched} GPUs`;
    renderPlan(r.data, false);
    renderDetails(r.data);
    setSliders(r.data);
    pareto();
  } finally {
    $("solve").disabled = false;
  }
}

// ------------------------------------------------------------------ the Pareto chart

async function pareto() {
  const r = await post("/pareto", { axes: "tpot" });
  if (!r.ok || !r.data.tpot) return;
  const points = r.data.tpot.points.filter((p) => p.cost_usd_per_hour > 0 && p.value > 0);
  $("pareto-title").hidden = !points.length;
  if (!points.length) return void ($("pareto").innerHTML = "");
  const W = 620, H = 300, L = 60, B = 36, T = 10, R = 12;
  const xs = points.map((p) => Math.log(p.value)), ys = points.map((p) => Math.log(p.cost_usd_per_hour));
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const px = (v) => L + ((Math.log(v) - x0) / (x1 - x0 || 1)) * (W - L - R);
  const py = (v) => H - B - ((Math.log(v) - y0) / (y1 - y0 || 1)) * (H - B - T);
  const chosen = state.lastPlan;
  const sorted = [...points].sort((a, b) => a.value - b.value);
  let svg = `<svg id="pareto-svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="cost against TPOT">`;
  svg += `<path d="${sorted.map((p, i) => `${i ? "L" : "M"}${px(p.value).toFixed(1)},${py(p.cost_usd_per_hour).toFixed(1)}`).join(" ")}"/>`;
  sorted.forEach((p, i) => {
    const isChosen = chosen && p.gpu === chosen.gpu && p.tp === chosen.tp && p.replicas === chosen.replicas && Math.abs(p.cost_usd_per_hour - chosen.cost_usd_per_hour) < 1e-6;
    svg += `<circle data-i="${i}" class="${isChosen ? "chosen" : ""}" cx="${px(p.value).toFixed(1)}" cy="${py(p.cost_usd_per_hour).toFixed(1)}" r="5"><title>${esc(p.plan)}: $${p.cost_usd_per_hour.toFixed(2)}/h, TPOT ${seconds(p.value)}</title></circle>`;
  });
  const [lo, hi] = [sorted[0], sorted[sorted.length - 1]];
  svg += `<text x="${L}" y="${H - 8}">TPOT ${seconds(lo.value)}</text><text x="${W - R}" y="${H - 8}" text-anchor="end">${seconds(hi.value)}</text>`;
  svg += `<text x="4" y="${H - B}">$${Math.min(...points.map((p) => p.cost_usd_per_hour)).toFixed(2)}/h</text><text x="4" y="${T + 10}">$${Math.max(...points.map((p) => p.cost_usd_per_hour)).toFixed(2)}/h</text>`;
  svg += `</svg>`;
  $("pareto").innerHTML = svg;
  $("pareto").querySelectorAll("circle").forEach((c) =>
    c.addEventListener("click", () => {
      const p = sorted[Number(c.dataset.i)];
      $("point").textContent = `${p.plan}: $${p.cost_usd_per_hour.toFixed(2)}/h, TPOT ${seconds(p.value)}, TTFT ${seconds(p.ttft_s)} — ${p.binds}`;
    })
  );
}

// ------------------------------------------------------------------ start

specBox.value = location.hash.startsWith("#spec=") ? b64decode(location.hash.slice(6)) : DEFAULT_SPEC;
specBox.addEventListener("input", edited);
specBox.addEventListener("scroll", () => ($("gutter").scrollTop = specBox.scrollTop));
$("solve").addEventListener("click", solve);
for (const name of Object.keys(SLIDERS)) {
  $(name).addEventListener("input", () => slid(name, false));
  $(name).addEventListener("change", () => slid(name, true));
}
$("link").href = `#spec=${b64encode(specBox.value)}`;
gutter(null);
validate();
