/** One time-series line chart with uPlot (compare chart-chartjs.ts). */
import uPlot from "uplot";

const xs = Array.from({ length: 96 }, (_, i) => 1_700_000_000 + i * 900);
const ys = xs.map((_, i) => Math.round(50 + 40 * Math.sin(i / 8)));
new uPlot({ width: 600, height: 200, scales: { x: { time: true } }, series: [{}, { label: "requests", stroke: "#4f7cff" }] }, [xs, ys], document.body);
