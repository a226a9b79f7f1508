/**
 * Camera moves for the preview renderer. A move maps time t ∈ [0, 1] to a view window inside the
 * cover-cropped source: `zoom` ≥ 1 (1 = the whole crop) and a centre (cx, cy) in crop units 0..1.
 * Picked from the prompt's words when it names one, otherwise from the seed.
 */

export type MotionKind = "zoom-in" | "zoom-out" | "pan-left" | "pan-right" | "pan-up" | "pan-down" | "drift";
export const MOTION_KINDS: readonly MotionKind[] = ["zoom-in", "zoom-out", "pan-left", "pan-right", "pan-up", "pan-down", "drift"];

export interface ViewWindow {
  zoom: number;
  cx: number;
  cy: number;
}

export interface CameraMotion {
  kind: MotionKind;
  at(t: number): ViewWindow;
}

/** mulberry32: small, fast, and the same sequence everywhere for one seed */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROMPT_RULES: Array<[RegExp, MotionKind | "zoom"]> = [
  [/\b(zoom(ing)?\s+out|pull(s|ing)?\s+(back|out)|dolly\s+out)\b/, "zoom-out"],
  [/\b(zoom(ing)?\s+in|push(es|ing)?\s+in|dolly\s+in|close[\s-]?up|closer)\b/, "zoom-in"],
  [/\b(pan(ning)?|track(ing)?|truck(ing)?|mov(e|ing))\s+(to\s+the\s+)?left\b/, "pan-left"],
  [/\b(pan(ning)?|track(ing)?|truck(ing)?|mov(e|ing))\s+(to\s+the\s+)?right\b/, "pan-right"],
  [/\b((pan(ning)?|tilt(ing)?|mov(e|ing))\s+up(ward)?s?|crane\s+up)\b/, "pan-up"],
  [/\b((pan(ning)?|tilt(ing)?|mov(e|ing))\s+down(ward)?s?|crane\s+down)\b/, "pan-down"],
  [/\b(drift(ing)?|float(ing)?|sway(ing)?|handheld)\b/, "drift"],
  [/\bzoom/, "zoom"],
];

export function chooseMotion(prompt: string, seed: number): CameraMotion {
  const random = seededRandom(seed);
  const text = prompt.toLowerCase();
  let kind: MotionKind | undefined;
  for (const [pattern, k] of PROMPT_RULES) {
    if (!pattern.test(text)) continue;
    kind = k === "zoom" ? (random() < 0.5 ? "zoom-in" : "zoom-out") : k;
    break;
  }
  kind ??= MOTION_KINDS[Math.floor(random() * MOTION_KINDS.length)]!;
  return buildMotion(kind, random);
}

/** slow in, slow out: a camera operator does not start or stop at full speed */
const ease = (t: number) => t * t * (3 - 2 * t);

function buildMotion(kind: MotionKind, random: () => number): CameraMotion {
  // seed-varied strength, kept small enough that bilinear upsampling stays sharp-ish
  const amount = 0.18 + random() * 0.14; // zoom-in reaches 1.18×–1.32×
  const panZoom = 1.2 + random() * 0.1; // pans need a margin to move through
  const margin = (z: number) => (1 - 1 / z) / 2; // how far the centre may move from 0.5
  const jitter = (random() - 0.5) * 0.5; // where across the other axis a pan runs (fraction of margin)

  switch (kind) {
    case "zoom-in":
    case "zoom-out": {
      const endZoom = 1 + amount;
      const fx = 0.5 + (random() - 0.5) * 2 * margin(endZoom) * 0.6; // zoom towards a point near the centre
      const fy = 0.5 + (random() - 0.5) * 2 * margin(endZoom) * 0.6;
      return {
        kind,
        at(t) {
          const p = ease(kind === "zoom-in" ? t : 1 - t);
          const zoom = 1 + amount * p;
          // move the centre towards the focus only as far as the window allows
          const m = margin(zoom);
          return { zoom, cx: clamp(0.5 + (fx - 0.5) * p, 0.5 - m, 0.5 + m), cy: clamp(0.5 + (fy - 0.5) * p, 0.5 - m, 0.5 + m) };
        },
      };
    }
    case "pan-left":
    case "pan-right":
    case "pan-up":
    case "pan-down": {
      const m = margin(panZoom);
      const horizontal = kind === "pan-left" || kind === "pan-right";
      // "pan left" turns the camera left: the window travels from the right edge to the left edge
      const from = kind === "pan-left" || kind === "pan-up" ? 0.5 + m : 0.5 - m;
      const to = 1 - from;
      const across = 0.5 + jitter * m;
      return {
        kind,
        at(t) {
          const along = from + (to - from) * ease(t);
          return horizontal ? { zoom: panZoom, cx: along, cy: across } : { zoom: panZoom, cx: across, cy: along };
        },
      };
    }
    case "drift": {
      const zoom0 = 1.12 + random() * 0.06;
      const angle = random() * Math.PI * 2;
      const m = margin(zoom0);
      const dx = Math.cos(angle) * m * 0.9;
      const dy = Math.sin(angle) * m * 0.9;
      const breathe = 0.03 + random() * 0.03;
      return {
        kind,
        at(t) {
          const zoom = zoom0 + breathe * Math.sin(Math.PI * t);
          const p = ease(t) * 2 - 1; // -1 → 1 through the centre
          return { zoom, cx: 0.5 + dx * p, cy: 0.5 + dy * p };
        },
      };
    }
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}
