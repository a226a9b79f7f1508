/**
 * Worker: decodes the source image and renders the camera move's frames, handing each frame's
 * buffer to the parent (transferred, not copied). The parent grants credits so at most a few
 * frames wait in memory. Protocol: {type: "start", image, width, height, frameCount, prompt, seed,
 * credits} then {type: "credit"}…; replies {type: "frame", frame}, {type: "done"} or
 * {type: "error", code, message}.
 */
import { decodeImage, ImageDecodeError } from "../../src/media/index.ts";
import { chooseMotion } from "./camera-motion.ts";
import { renderFrame, type FramePlan } from "./render-frames.ts";

declare const self: Worker;

let credits = 0;
let wake: (() => void) | null = null;

self.onmessage = (e: MessageEvent) => {
  const m = e.data as { type: string; image?: Uint8Array; width: number; height: number; frameCount: number; prompt: string; seed: number; credits?: number };
  if (m.type === "credit") {
    credits++;
    wake?.();
    wake = null;
    return;
  }
  credits = m.credits ?? 4;
  run(m).catch((err: unknown) =>
    postMessage({ type: "error", code: err instanceof ImageDecodeError ? "invalid_image" : "render_failed", message: (err as Error).message }),
  );
};

async function run(m: { image?: Uint8Array; width: number; height: number; frameCount: number; prompt: string; seed: number }) {
  const source = await decodeImage(m.image!);
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
