/** A uPlot line chart that follows its container's width. */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export const PALETTE = ["#4f7cff", "#18a999", "#f28e2b", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"];

export interface LineSeries {
  label: string;
  values: Array<number | null>;
  color?: string;
}

export function Chart(p: { title: string; timestamps: number[]; series: LineSeries[]; format?: (v: number) => string; height?: number; max?: number; emptyMax?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const fmt = p.format ?? ((v: number) => String(v));
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: p.height ?? 200,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      // every measure is ≥ 0: the y axis starts at 0 and never collapses when all values are 0
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.min(p.max ?? Infinity, max > 0 ? max * 1.1 : (p.emptyMax ?? p.max ?? 1))] } },
      axes: [
        { stroke: "#8a93a6", grid: { stroke: "#8a93a622" }, ticks: { stroke: "#8a93a644" } },
        { stroke: "#8a93a6", grid: { stroke: "#8a93a622" }, ticks: { stroke: "#8a93a644" }, values: (_u, vals) => vals.map((v) => (v === null ? "" : fmt(v))), size: 60 },
      ],
      series: [
        {},
        ...p.series.map((s, i) => ({
          label: s.label,
          stroke: s.color ?? PALETTE[i % PALETTE.length],
          width: 2,
          points: { size: 5 },
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v === null || v === undefined ? "—" : fmt(v)),
        })),
      ],
    };
    const data = [p.timestamps, ...p.series.map((s) => s.values)] as uPlot.AlignedData;
    plot.current = new uPlot(opts, data, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: p.height ?? 200 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [p.timestamps, p.series, p.height]);
  return (
    <figure class="chart">
      <figcaption>{p.title}</figcaption>
      <div ref={box} role="img" aria-label={`${p.title} chart`} />
    </figure>
  );
}
