/** The same chart with Chart.js (tree-shaken: only the parts a line chart needs; a time axis would also need a date adapter). */
import { CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from "chart.js";

Chart.register(LineController, LineElement, PointElement, LinearScale, CategoryScale, Legend, Tooltip);
const xs = Array.from({ length: 96 }, (_, i) => 1_700_000_000 + i * 900);
const ys = xs.map((_, i) => Math.round(50 + 40 * Math.sin(i / 8)));
const canvas = document.createElement("canvas");
document.body.append(canvas);
new Chart(canvas, {
  type: "line",
  data: { labels: xs.map((x) => new Date(x * 1000).toISOString().slice(11, 16)), datasets: [{ label: "requests", data: ys, borderColor: "#4f7cff" }] },
  options: { animation: false, responsive: false },
});
