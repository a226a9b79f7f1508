/**
 * A uPlot chart that follows its container's width, in one of two forms:
 *
 * - `stacked`: bars per time bucket, one coloured segment per series (per model). Counts add up, so
 *   stacking shows each model's share; as lines, three models with 1 request in the same bucket
 *   drew three identical lines and only the last one was visible.
 * - `lines`: for rates and percentiles, which do not add up (error rate, p50/p99 latency). A value
 *   with no neighbour (one bucket with traffic in 24 h) is a line of zero length, i.e. nothing: such
 *   points get a dot. Earlier series are drawn wider, so a line or dot lying exactly under a later
 *   one (p50 = p99 for a single request) still shows as a ring around it.
 *
 * Each bucket's bar spans [t, t + step): the x range ends one step after the last timestamp, so the
 * current bucket (where sparse data usually is) is drawn whole, not cut in half at the edge.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { isolated, stack } from "../chart-data.ts";

export const PALETTE = ["#4f7cff", "#18a999", "#f28e2b", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"];

export interface LineSeries {
  label: string;
  values: Array<number | null>;
  color?: string;
}

const AXIS = { stroke: "#8a93a6", grid: { stroke: "#8a93a622" }, ticks: { stroke: "#8a93a644" } };

/**
 * The y axis as wide as its longest label: a fixed 60 px cut "$0.0075" (an empty credits chart's
 * scale) to "0.0075". uPlot asks again once the labels are known (cycle 2 keeps the size).
 */
function yAxisSize(u: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = u.axes[axisIdx]! as uPlot.Axis & { _size?: number; font: [string, number, number] | string[] };
  if (cycleNum > 1 && axis._size) return axis._size;
  const longest = (values ?? []).reduce((a, b) => (b.length > a.length ? b : a), "");
  u.ctx.font = String(axis.font[0]);
  const text = longest ? u.ctx.measureText(longest).width / (globalThis.devicePixelRatio || 1) : 0;
  return Math.ceil(text + (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + 6);
}

export function Chart(p: { title: string; timestamps: number[]; series: LineSeries[]; kind?: "lines" | "stacked"; format?: (v: number) => string; height?: number; max?: number; emptyMax?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const fmt = p.format ?? ((v: number) => String(v));
    const ts = p.timestamps;
    const step = ts.length > 1 ? ts[1]! - ts[0]! : 60;
    const color = (i: number) => p.series[i]!.color ?? PALETTE[i % PALETTE.length]!;
    const shown = (v: number | null | undefined) => (v === null || v === undefined ? "—" : fmt(v));
    let series: uPlot.Series[];
    let data: Array<Array<number | null>>;
    if (p.kind === "stacked") {
      const sums = stack(p.series.map((s) => s.values));
      // top of the stack first: each later (lower) series paints over the part of the bar below it
      const order = p.series.map((_, i) => i).reverse();
      const bars = uPlot.paths.bars!({ align: 1, size: [0.85, Infinity, 3] });
      data = order.map((i) => sums[i]!);
      series = order.map((i) => ({
        label: p.series[i]!.label,
        stroke: color(i),
        fill: color(i),
        width: 0,
        paths: bars,
        points: { show: false },
        // the legend shows this series' own value, not the running sum it is drawn at
        value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) => shown(idx === null ? null : p.series[i]!.values[idx]),
      }));
    } else {
      const n = p.series.length;
      data = p.series.map((s) => s.values);
      series = p.series.map((s, i) => {
        const under = n - 1 - i; // how many series are drawn over this one
        return {
          label: s.label,
          stroke: color(i),
          width: 2 + under * 1.5,
          spanGaps: false,
          points: {
            size: 8 + under * 4,
            fill: color(i),
            // where uPlot shows no dots (dense data), still dot the values a line cannot draw
            filter: (u: uPlot, si: number, show: boolean) => {
              if (show) return null;
              const idxs = isolated(u.data[si]!);
              return idxs.length ? idxs : null;
            },
          },
          value: (_u: uPlot, v: number | null) => shown(v),
        };
      });
    }
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: p.height ?? 200,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: (_u, min, max) => [min, max + step] },
        // every measure is ≥ 0: the y axis starts at 0 and never collapses when all values are 0
        y: { range: (_u, _min, max) => [0, Math.min(p.max ?? Infinity, max > 0 ? max * 1.1 : (p.emptyMax ?? p.max ?? 1))] },
      },
      axes: [AXIS, { ...AXIS, values: (_u, vals) => vals.map((v) => (v === null ? "" : fmt(v))), size: yAxisSize }],
      series: [{}, ...series],
    };
    plot.current = new uPlot(opts, [ts, ...data] as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: p.height ?? 200 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [p.timestamps, p.series, p.height, p.kind]);
  return (
    <figure class="chart">
      <figcaption>{p.title}</figcaption>
      <div ref={box} role="img" aria-label={`${p.title} chart`} />
    </figure>
  );
}
