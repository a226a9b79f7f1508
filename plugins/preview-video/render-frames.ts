/**
 * Frames of a camera move over one still image: cover-crop to the output aspect, then a bilinear
 * resample of the moving view window per frame. Per-row and per-column source indices and weights
 * are precomputed for each frame, so the inner loop is four loads and a blend per channel.
 * (Reading whole pixels through a Uint32Array view was measured slower in Bun: 1.0 s vs 0.7 s / 80 frames.)
 */
import type { DecodedImage } from "@reelay/plugin-sdk";
import type { CameraMotion } from "./camera-motion.ts";

export interface FramePlan {
  width: number;
  height: number;
  frameCount: number;
  motion: CameraMotion;
}

/** the largest source rectangle with the output's aspect ratio, centred */
export function coverCrop(srcW: number, srcH: number, outW: number, outH: number) {
  const scale = Math.min(srcW / outW, srcH / outH);
  const w = outW * scale;
  const h = outH * scale;
  return { x: (srcW - w) / 2, y: (srcH - h) / 2, w, h };
}

/** Renders frame `index` of the plan into `out` (width × height × 4 RGBA). */
export function renderFrame(src: DecodedImage, plan: FramePlan, index: number, out: Uint8Array): void {
  const { width, height, frameCount, motion } = plan;
  const crop = coverCrop(src.width, src.height, width, height);
  const t = frameCount > 1 ? index / (frameCount - 1) : 0;
  const view = motion.at(t);
  const winW = crop.w / view.zoom;
  const winH = crop.h / view.zoom;
  const winX = crop.x + view.cx * crop.w - winW / 2;
  const winY = crop.y + view.cy * crop.h - winH / 2;

  const xs = axis(winX, winW / width, width, src.width, 4);
  const ys = axis(winY, winH / height, height, src.height, src.width * 4);
  const xIndex = xs.index, xStep = xs.step, xWeight = xs.weight;
  const s = src.rgba;
  let o = 0;
  for (let y = 0; y < height; y++) {
    const r0 = ys.index[y]!;
    const r1 = r0 + ys.step[y]!;
    const wy = ys.weight[y]!;
    for (let x = 0; x < width; x++) {
      const c0 = xIndex[x]!;
      const c1 = c0 + xStep[x]!;
      const wx = xWeight[x]!;
      const a = r0 + c0, b = r0 + c1, c = r1 + c0, d = r1 + c1;
      // 8-bit fixed-point weights: blend along x on both rows, then along y, round, >> 16
      let top = (s[a]! << 8) + (s[b]! - s[a]!) * wx;
      let bottom = (s[c]! << 8) + (s[d]! - s[c]!) * wx;
      out[o] = ((top << 8) + (bottom - top) * wy + 32768) >> 16;
      top = (s[a + 1]! << 8) + (s[b + 1]! - s[a + 1]!) * wx;
      bottom = (s[c + 1]! << 8) + (s[d + 1]! - s[c + 1]!) * wx;
      out[o + 1] = ((top << 8) + (bottom - top) * wy + 32768) >> 16;
      top = (s[a + 2]! << 8) + (s[b + 2]! - s[a + 2]!) * wx;
      bottom = (s[c + 2]! << 8) + (s[d + 2]! - s[c + 2]!) * wx;
      out[o + 2] = ((top << 8) + (bottom - top) * wy + 32768) >> 16;
      out[o + 3] = 255;
      o += 4;
    }
  }
}

/** source offset (index × unit), neighbour step (0 at the edge) and 8-bit weight per output position */
function axis(start: number, step: number, count: number, srcSize: number, unit: number) {
  const index = new Int32Array(count);
  const next = new Int32Array(count);
  const weight = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    // sample at pixel centres
    let pos = start + (i + 0.5) * step - 0.5;
    if (pos < 0) pos = 0;
    if (pos > srcSize - 1) pos = srcSize - 1;
    const i0 = Math.floor(pos);
    index[i] = i0 * unit;
    next[i] = i0 < srcSize - 1 ? unit : 0;
    weight[i] = Math.round((pos - i0) * 256);
  }
  return { index, step: next, weight };
}
