import { describe, expect, test } from "bun:test";
import { coverCrop, renderFrame } from "./render-frames.ts";
import type { CameraMotion } from "./camera-motion.ts";

const still: CameraMotion = { kind: "drift", at: () => ({ zoom: 1, cx: 0.5, cy: 0.5 }) };

describe("renderFrame", () => {
  test("cover-crops to the output aspect, centred", () => {
    expect(coverCrop(200, 100, 50, 50)).toEqual({ x: 50, y: 0, w: 100, h: 100 });
    expect(coverCrop(100, 300, 100, 100)).toEqual({ x: 0, y: 100, w: 100, h: 100 });
  });

  test("a 2x downscale of 2x2 blocks gives the block colours; the crop drops the sides", () => {
    // 8x4 source: columns 0-1 red, 2-3 green, 4-5 blue, 6-7 white; output 2x2 keeps the middle 4 columns
    const src = new Uint8Array(8 * 4 * 4);
    const colours = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]];
    for (let y = 0; y < 4; y++) for (let x = 0; x < 8; x++) src.set([...colours[x >> 1]!, 255], (y * 8 + x) * 4);
    const out = new Uint8Array(2 * 2 * 4);
    renderFrame({ width: 8, height: 4, rgba: src }, { width: 2, height: 2, frameCount: 1, motion: still }, 0, out);
    // each output pixel centre falls between two source pixels of one block
    expect([...out.subarray(0, 4)]).toEqual([0, 255, 0, 255]);
    expect([...out.subarray(4, 8)]).toEqual([0, 0, 255, 255]);
  });

  test("bilinear: upscaling a two-pixel ramp interpolates between them", () => {
    const src = new Uint8Array([0, 0, 0, 255, 200, 100, 40, 255]);
    const out = new Uint8Array(8 * 1 * 4);
    renderFrame({ width: 2, height: 1, rgba: src }, { width: 8, height: 1, frameCount: 1, motion: still }, 0, out);
    const reds = [...out].filter((_, i) => i % 4 === 0);
    expect(reds[0]).toBe(0);
    expect(reds[7]).toBe(200);
    for (let i = 1; i < 8; i++) expect(reds[i]!).toBeGreaterThanOrEqual(reds[i - 1]!);
    expect(new Set(reds).size).toBeGreaterThan(4); // intermediate values, not nearest-neighbour steps
  });
});
