/**
 * Real MP4s for the fake video backends (ComfyUI, Replicate, fal, OpenAI-style): H.264 at exactly
 * the size and frame count a job asked for, encoded by reelay's own host encoder (its worker
 * threads, as plugins get it through ctx.host.encodeMp4), so ffprobe decodes what a client would.
 * Each (width, height, frames, fps) is encoded once and cached: a benchmark of 1,000 jobs of one
 * shape encodes one clip.
 */
import { hostServices } from "../../src/plugin-host/host-services.ts";

export interface ClipShape {
  width: number;
  height: number;
  frames: number;
  fps: number;
}

const host = hostServices();
const clips = new Map<string, Promise<Uint8Array>>();

export function fakeClip(shape: ClipShape): Promise<Uint8Array> {
  const width = even(shape.width), height = even(shape.height);
  const frames = Math.max(1, Math.min(1_000, Math.round(shape.frames)));
  const fps = Math.max(1, Math.min(120, Math.round(shape.fps)));
  const key = `${width}x${height}/${frames}@${fps}`;
  let clip = clips.get(key);
  if (!clip) {
    clip = host.encodeMp4(gradient(width, height, frames), { width, height, fps, quantizer: 40 });
    clip.catch(() => clips.delete(key));
    clips.set(key, clip);
  }
  return clip;
}

/** H.264 4:2:0 wants even sides; anything else asked of a fake is a test bug, said loudly. */
function even(n: number): number {
  if (!Number.isInteger(n) || n < 16 || n > 4096 || n % 2) throw new Error(`fake clip: ${n} is not an even size between 16 and 4096`);
  return n;
}

/** A diagonal gradient sliding one step per frame: cheap to draw, visibly moving. */
function* gradient(width: number, height: number, frames: number): Generator<Uint8Array> {
  const rgba = new Uint8Array(width * height * 4);
  for (let f = 0; f < frames; f++) {
    for (let y = 0, i = 0; y < height; y++) {
      for (let x = 0; x < width; x++, i += 4) {
        const v = (x + y + f * 8) & 0xff;
        rgba[i] = v;
        rgba[i + 1] = 255 - v;
        rgba[i + 2] = (f * 16) & 0xff;
        rgba[i + 3] = 255;
      }
    }
    yield rgba;
  }
}

/** A job's behaviour with its run time drawn from `runMsRange` when there is one (the fakes' benchmarks: 2–10 s each). */
export function withRunTime<B extends { runMs?: number; runMsRange?: [number, number] }>(b: B): B {
  if (!b.runMsRange) return { ...b };
  const [min, max] = b.runMsRange;
  return { ...b, runMs: Math.round(min + Math.random() * (max - min)) };
}
