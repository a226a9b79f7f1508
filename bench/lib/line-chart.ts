/**
 * Line charts as a PNG, drawn into an RGBA buffer and encoded with fast-png (already a dependency):
 * panels stacked vertically, each with its series, a light grid, its title and y range written in a
 * 3x5 pixel font (scaled 2x) — enough for a benchmark's figures, nothing fetched at run time.
 */
import { encode } from "fast-png";

export interface Series {
  name: string;
  /** [x, y] points, x in the chart's unit (minutes) */
  points: Array<[number, number]>;
}

export interface Panel {
  title: string;
  series: Series[];
  /** y axis starts at 0 (default) */
  zeroBased?: boolean;
}

const W = 1200;
const PANEL_H = 200;
const PAD_L = 70, PAD_R = 200, PAD_T = 24, PAD_B = 20;
const COLOURS: Array<[number, number, number]> = [[31, 119, 180], [214, 39, 40], [44, 160, 44], [255, 127, 14], [148, 103, 189], [140, 86, 75], [227, 119, 194], [23, 190, 207]];

// 3x5 glyphs, rows top to bottom, 3 bits each (MSB left)
const FONT: Record<string, number[]> = {
  "0": [7, 5, 5, 5, 7], "1": [2, 6, 2, 2, 7], "2": [7, 1, 7, 4, 7], "3": [7, 1, 7, 1, 7], "4": [5, 5, 7, 1, 1],
  "5": [7, 4, 7, 1, 7], "6": [7, 4, 7, 5, 7], "7": [7, 1, 1, 2, 2], "8": [7, 5, 7, 5, 7], "9": [7, 5, 7, 1, 7],
  A: [2, 5, 7, 5, 5], B: [6, 5, 6, 5, 6], C: [7, 4, 4, 4, 7], D: [6, 5, 5, 5, 6], E: [7, 4, 6, 4, 7], F: [7, 4, 6, 4, 4],
  G: [7, 4, 5, 5, 7], H: [5, 5, 7, 5, 5], I: [7, 2, 2, 2, 7], J: [1, 1, 1, 5, 7], K: [5, 5, 6, 5, 5], L: [4, 4, 4, 4, 7],
  M: [5, 7, 7, 5, 5], N: [6, 5, 5, 5, 5], O: [7, 5, 5, 5, 7], P: [7, 5, 7, 4, 4], Q: [7, 5, 5, 7, 1], R: [6, 5, 6, 5, 5],
  S: [7, 4, 7, 1, 7], T: [7, 2, 2, 2, 2], U: [5, 5, 5, 5, 7], V: [5, 5, 5, 5, 2], W: [5, 5, 7, 7, 5], X: [5, 5, 2, 5, 5],
  Y: [5, 5, 2, 2, 2], Z: [7, 1, 2, 4, 7], " ": [0, 0, 0, 0, 0], ".": [0, 0, 0, 0, 2], "-": [0, 0, 7, 0, 0], "/": [1, 1, 2, 4, 4],
  "(": [1, 2, 2, 2, 1], ")": [4, 2, 2, 2, 4], ":": [0, 2, 0, 2, 0], "%": [5, 1, 2, 4, 5], _: [0, 0, 0, 0, 7], ",": [0, 0, 0, 2, 4],
};

class Canvas {
  readonly data: Uint8Array;
  constructor(readonly w: number, readonly h: number) {
    this.data = new Uint8Array(w * h * 4).fill(255);
  }
  px(x: number, y: number, [r, g, b]: [number, number, number]) {
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= this.w || y >= this.h) return;
    const i = (y * this.w + x) * 4;
    this.data[i] = r;
    this.data[i + 1] = g;
    this.data[i + 2] = b;
    this.data[i + 3] = 255;
  }
  line(x0: number, y0: number, x1: number, y1: number, c: [number, number, number], thick = 1) {
    const steps = Math.max(1, Math.ceil(Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0))));
    for (let s = 0; s <= steps; s++) {
      const x = x0 + ((x1 - x0) * s) / steps, y = y0 + ((y1 - y0) * s) / steps;
      for (let d = 0; d < thick; d++) this.px(x, y + d, c);
    }
  }
  text(x: number, y: number, s: string, c: [number, number, number] = [0, 0, 0], scale = 2) {
    for (const ch of s.toUpperCase()) {
      const g = FONT[ch] ?? FONT[" "]!;
      for (let row = 0; row < 5; row++)
        for (let col = 0; col < 3; col++)
          if (g[row]! & (4 >> col)) for (let dy = 0; dy < scale; dy++) for (let dx = 0; dx < scale; dx++) this.px(x + col * scale + dx, y + row * scale + dy, c);
      x += 4 * scale;
    }
  }
}

const fmt = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** Draws the panels one above the other over a shared x range; returns the PNG bytes. */
export function lineChartPng(panels: Panel[], xLabel: string): Uint8Array {
  const xs = panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x)));
  const xMin = Math.min(...xs), xMax = Math.max(...xs, xMin + 1e-9);
  const c = new Canvas(W, panels.length * PANEL_H + 20);
  panels.forEach((p, i) => {
    const top = i * PANEL_H;
    const x0 = PAD_L, x1 = W - PAD_R, y0 = top + PAD_T, y1 = top + PANEL_H - PAD_B;
    const ys = p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite);
    let yMin = p.zeroBased === false ? Math.min(...ys) : 0;
    let yMax = Math.max(...ys, yMin + 1e-9);
    const pad = (yMax - yMin) * 0.05;
    yMax += pad;
    if (p.zeroBased === false) yMin -= pad;
    const X = (x: number) => x0 + ((x - xMin) / (xMax - xMin)) * (x1 - x0);
    const Y = (y: number) => y1 - ((y - yMin) / (yMax - yMin)) * (y1 - y0);
    for (let g = 0; g <= 4; g++) {
      const y = y0 + ((y1 - y0) * g) / 4;
      c.line(x0, y, x1, y, [225, 225, 225]);
      c.text(4, y - 5, fmt(yMax - ((yMax - yMin) * g) / 4), [90, 90, 90]);
    }
    const step = xMax - xMin > 10 ? 5 : 1;
    for (let m = Math.ceil(xMin / step) * step; m <= xMax; m += step) {
      c.line(X(m), y0, X(m), y1, [225, 225, 225]);
      c.text(X(m) - 4, y1 + 4, String(m), [90, 90, 90]);
    }
    c.line(x0, y1, x1, y1, [0, 0, 0]);
    c.line(x0, y0, x0, y1, [0, 0, 0]);
    c.text(x0, top + 6, p.title);
    p.series.forEach((s, j) => {
      const col = COLOURS[j % COLOURS.length]!;
      const pts = s.points.filter(([, y]) => Number.isFinite(y));
      for (let k = 1; k < pts.length; k++) c.line(X(pts[k - 1]![0]), Y(pts[k - 1]![1]), X(pts[k]![0]), Y(pts[k]![1]), col, 2);
      c.line(x1 + 12, y0 + 8 + j * 16, x1 + 32, y0 + 8 + j * 16, col, 3);
      c.text(x1 + 38, y0 + 4 + j * 16, s.name, col);
    });
  });
  c.text(W / 2 - 40, c.h - 14, xLabel, [90, 90, 90]);
  return encode({ width: c.w, height: c.h, data: c.data, channels: 4, depth: 8 });
}
