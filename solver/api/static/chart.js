// The Pareto chart of cost ($/hour) against TPOT: both axes on log scales, with ticks at
// 1-2-5 steps (or the range's two ends when it is too narrow for two of them), the
// chosen plan's point marked. Plain SVG; loaded before app.js, which calls drawChart.
"use strict";

// values m × 10^k (m = 1, 2, 5) inside [lo, hi]; the ends themselves when fewer than two
function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push(v);
    }
  }
  return ticks.length >= 2 ? ticks : [lo, hi];
}

function usd(v) {
  return `$${v >= 100 || (v >= 10 && Number.isInteger(v)) ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)}`;
}

function clearChart() {
  $("pareto").innerHTML = "";
  $("pareto").classList.remove("stale");
  $("pareto-title").hidden = true;
  $("point").textContent = "";
}

function drawChart(allPoints, chosen) {
  const points = allPoints.filter((p) => p.cost_usd_per_hour > 0 && p.value > 0);
  clearChart();
  if (!points.length) return;
  $("pareto-title").hidden = false;
  const W = 620, H = 320, L = 64, B = 52, T = 12, R = 16;
  const tpots = points.map((p) => p.value), costs = points.map((p) => p.cost_usd_per_hour);
  // the domain reaches 8% beyond the points on each side, so none sits on an axis
  const pad = Math.log(1.08);
  const [x0, x1] = [Math.log(Math.min(...tpots)) - pad, Math.log(Math.max(...tpots)) + pad];
  const [y0, y1] = [Math.log(Math.min(...costs)) - pad, Math.log(Math.max(...costs)) + pad];
  const px = (v) => L + ((Math.log(v) - x0) / (x1 - x0)) * (W - L - R);
  const py = (v) => H - B - ((Math.log(v) - y0) / (y1 - y0)) * (H - B - T);
  const sorted = [...points].sort((a, b) => a.value - b.value);
  let svg = `<svg id="pareto-svg" viewBox="0 0 ${W} ${H}" role="img" aria-label="cost in dollars per hour against TPOT">`;
  svg += `<g id="x-axis" class="axis"><line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}"/>`;
  for (const v of logTicks(Math.exp(x0), Math.exp(x1))) {
    const x = px(v).toFixed(1);
    svg += `<g class="tick" data-value="${v}" data-pos="${x}"><line x1="${x}" y1="${H - B}" x2="${x}" y2="${H - B + 5}"/><text x="${x}" y="${H - B + 18}" text-anchor="middle">${seconds(v)}</text></g>`;
  }
  svg += `<text class="title" x="${(L + W - R) / 2}" y="${H - 8}" text-anchor="middle">TPOT (time per output token, log scale)</text></g>`;
  svg += `<g id="y-axis" class="axis"><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}"/>`;
  for (const v of logTicks(Math.exp(y0), Math.exp(y1))) {
    const y = py(v).toFixed(1);
    svg += `<g class="tick" data-value="${v}" data-pos="${y}"><line x1="${L - 5}" y1="${y}" x2="${L}" y2="${y}"/><text x="${L - 8}" y="${y}" dy="4" text-anchor="end">${usd(v)}</text></g>`;
  }
  svg += `<text class="title" transform="translate(14 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">cost $/h (log scale)</text></g>`;
  svg += `<path d="${sorted.map((p, i) => `${i ? "L" : "M"}${px(p.value).toFixed(1)},${py(p.cost_usd_per_hour).toFixed(1)}`).join(" ")}"/>`;
  sorted.forEach((p, i) => {
    const isChosen = chosen && p.gpu === chosen.gpu && p.tp === chosen.tp && p.replicas === chosen.replicas && Math.abs(p.cost_usd_per_hour - chosen.cost_usd_per_hour) < 1e-6;
    svg += `<circle data-i="${i}" data-tpot="${p.value}" data-cost="${p.cost_usd_per_hour}" class="${isChosen ? "chosen" : ""}" cx="${px(p.value).toFixed(1)}" cy="${py(p.cost_usd_per_hour).toFixed(1)}" r="5"><title>${esc(p.plan)}: $${p.cost_usd_per_hour.toFixed(2)}/h, TPOT ${seconds(p.value)}</title></circle>`;
  });
  svg += `</svg>`;
  $("pareto").innerHTML = svg;
  $("pareto").querySelectorAll("circle").forEach((c) =>
    c.addEventListener("click", () => {
      const p = sorted[Number(c.dataset.i)];
      $("point").textContent = `${p.plan}: $${p.cost_usd_per_hour.toFixed(2)}/h, TPOT ${seconds(p.value)}, TTFT ${seconds(p.ttft_s)} — ${p.binds}`;
    })
  );
}
