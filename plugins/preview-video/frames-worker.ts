/**
 * Worker: renders the camera move's frames over the decoded source image, handing each frame's
 * buffer to the parent (transferred, not copied). The parent grants credits so at most a few
 * frames wait in memory. Protocol: {type: "start", image (RGBA), imageWidth, imageHeight, width,
 * height, frameCount, prompt, seed, credits} then {type: "credit"}…; replies {type: "frame", frame},
 * {type: "done"} or {type: "error", code, message}.
 */
import { chooseMotion } from "./camera-motion.ts";
import { renderFrame, type FramePlan } from "./render-frames.ts";

declare const self: Worker;

interface Start {
  type: "start";
  image: Uint8Array;
  imageWidth: number;
  imageHeight: number;
  width: number;
  height: number;
  frameCount: number;
  prompt: string;
  seed: number;
  credits: number;
}

let credits = 0;
let wake: (() => void) | null = null;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as Start | { type: "credit" };
  if (m.type === "credit") {
    credits++;
    wake?.();
    wake = null;
    return;
  }
  credits = m.credits;
  run(m).catch((err: unknown) => postMessage({ type: "error", code: "render_failed", message: (err as Error).message }));
};

async function run(m: Start) {
  const source = { width: m.imageWidth, height: m.imageHeight, rgba: m.image };
  const plan: FramePlan = { width: m.width, height: m.height, frameCount: m.frameCount, motion: chooseMotion(m.prompt, m.seed) };
  for (let i = 0; i < plan.frameCount; i++) {
    while (credits === 0) await new Promise<void>((r) => (wake = r));
    credits--;
    const out = new Uint8Array(plan.width * plan.height * 4);
    renderFrame(source, plan, i, out);
    postMessage({ type: "frame", frame: out.buffer }, [out.buffer]);
  }
  postMessage({ type: "done" });
}
