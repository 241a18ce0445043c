// Draws the usage charts from the page's JSON (billing.usage.DailyUsage.chart_data).
"use strict";

const PALETTE = ["#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#a855f7", "#14b8a6", "#64748b"];

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
    const datasets = series.datasets.map((set, n) => ({
      ...set,
      backgroundColor: PALETTE[n % PALETTE.length],
      borderRadius: 4,
      maxBarThickness: 28,
    }));
    const chart = new Chart(canvas, {
      type: "bar",
      data: { labels: series.labels, datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 12, usePointStyle: true } },
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
    canvas.dataset.points = String(datasets.reduce((sum, set) => sum + set.data.filter((v) => v > 0).length, 0));
    canvas.dataset.drawn = chart ? "true" : "false";
  }
}

document.addEventListener("DOMContentLoaded", drawUsage);
