import { describe, expect, test } from "bun:test";
import { chooseMotion, MOTION_KINDS } from "./camera-motion.ts";

describe("chooseMotion", () => {
  const cases: Array<[string, string]> = [
    ["slow zoom in on the castle", "zoom-in"],
    ["camera pulls back to reveal the city", "zoom-out"],
    ["zoom out", "zoom-out"],
    ["pan left across the beach", "pan-left"],
    ["Panning right over mountains", "pan-right"],
    ["tilt up to the sky", "pan-up"],
    ["pan down to the river", "pan-down"],
    ["a drifting dreamy shot", "drift"],
  ];
  for (const [prompt, kind] of cases) {
    test(`"${prompt}" → ${kind}`, () => {
      for (const seed of [1, 2, 3]) expect(chooseMotion(prompt, seed).kind).toBe(kind as never);
    });
  }

  test("directions are what the words say", () => {
    const left = chooseMotion("pan left", 5), right = chooseMotion("pan right", 5);
    expect(left.at(1).cx).toBeLessThan(left.at(0).cx);
    expect(right.at(1).cx).toBeGreaterThan(right.at(0).cx);
    const up = chooseMotion("pan up", 5), down = chooseMotion("pan down", 5);
    expect(up.at(1).cy).toBeLessThan(up.at(0).cy);
    expect(down.at(1).cy).toBeGreaterThan(down.at(0).cy);
    expect(chooseMotion("zoom in", 5).at(1).zoom).toBeGreaterThan(chooseMotion("zoom in", 5).at(0).zoom);
    expect(chooseMotion("zoom out", 5).at(1).zoom).toBeLessThan(chooseMotion("zoom out", 5).at(0).zoom);
  });

  test("without camera words the seed picks, deterministically, and every move is reachable", () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const a = chooseMotion("a cat on a sofa", seed), b = chooseMotion("a cat on a sofa", seed);
      expect(a.kind).toBe(b.kind);
      expect(a.at(0.37)).toEqual(b.at(0.37));
      seen.add(a.kind);
    }
    expect([...seen].sort()).toEqual([...MOTION_KINDS].sort());
  });

  test("the view window never leaves the image", () => {
    for (let seed = 0; seed < 100; seed++) {
      const m = chooseMotion("", seed);
      for (let t = 0; t <= 1; t += 0.05) {
        const { zoom, cx, cy } = m.at(t);
        const half = 0.5 / zoom;
        expect(zoom).toBeGreaterThanOrEqual(1);
        expect(cx - half).toBeGreaterThanOrEqual(-1e-9);
        expect(cx + half).toBeLessThanOrEqual(1 + 1e-9);
        expect(cy - half).toBeGreaterThanOrEqual(-1e-9);
        expect(cy + half).toBeLessThanOrEqual(1 + 1e-9);
      }
    }
  });
});
