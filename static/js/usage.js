// Draws the usage charts from the page's JSON (billing.usage.DailyUsage.chart_data).
"use strict";

// One colour a series, each unlike the others; past as many series as colours, the least
// called are drawn together as one, in grey.
const PALETTE = [
  "#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#a855f7",
  "#ec4899", "#84cc16", "#92400e", "#0f766e", "#1e293b",
];
const REST = "#cbd5e1";

function coloured(datasets) {
  if (datasets.length <= PALETTE.length) {
    return datasets.map((set, n) => ({ ...set, backgroundColor: PALETTE[n] }));
  }
  const kept = datasets.slice(0, PALETTE.length - 1);
  const rest = datasets.slice(PALETTE.length - 1);
  const data = rest[0].data.map((_, day) => rest.reduce((sum, set) => sum + set.data[day], 0));
  return [
    ...kept.map((set, n) => ({ ...set, backgroundColor: PALETTE[n] })),
    { label: `${rest.length} others`, data, backgroundColor: REST },
  ];
}

// The legend as a list under the chart: it wraps to as many rows as it needs on any width
// (Chart.js's own, drawn inside the canvas, cut its last rows on a phone). A click hides or
// shows the series.
function drawLegend(chart, canvas) {
  const list = document.createElement("ul");
  list.className = "legend";
  chart.data.datasets.forEach((set, n) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = set.backgroundColor;
    button.append(swatch, set.label);
    button.addEventListener("click", () => {
      chart.setDatasetVisibility(n, !chart.isDatasetVisible(n));
      item.classList.toggle("off", !chart.isDatasetVisible(n));
      chart.update();
    });
    item.append(button);
    list.append(item);
  });
  canvas.closest(".chart-box").after(list);
}

// Cost ticks share one width: as many decimals as the step between ticks needs (two to six).
function costTick(value, index, ticks) {
  const step = ticks.length > 1 ? Math.abs(ticks[1].value - ticks[0].value) : Math.abs(value);
  const decimals = step > 0 ? Math.min(6, Math.max(2, Math.ceil(-Math.log10(step) - 1e-9))) : 2;
  return "$" + Number(value).toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

function drawUsage() {
  const data = JSON.parse(document.getElementById("usage-data").textContent);
  for (const canvas of document.querySelectorAll("canvas[data-metric]")) {
    const metric = canvas.dataset.metric;
    const series = data[metric];
    const datasets = coloured(series.datasets).map((set) => ({ ...set, borderRadius: 4, maxBarThickness: 28 }));
    const chart = new Chart(canvas, {
      type: "bar",
      data: { labels: series.labels, datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { display: false },
          tooltip: metric === "cost" ? { callbacks: { label: (item) => `${item.dataset.label}: ${Momor.usd(item.raw)}` } } : {},
        },
        scales: {
          x: { stacked: true, grid: { display: false }, ticks: { maxRotation: 0, autoSkipPadding: 12 } },
          y: {
            stacked: true,
            beginAtZero: true,
            ticks: metric === "cost" ? { callback: costTick } : { precision: 0 },
          },
        },
      },
    });
    drawLegend(chart, canvas);
    canvas.dataset.points = String(datasets.reduce((sum, set) => sum + set.data.filter((v) => v > 0).length, 0));
    canvas.dataset.drawn = chart ? "true" : "false";
  }
}

document.addEventListener("DOMContentLoaded", drawUsage);
