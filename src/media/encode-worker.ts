/**
 * Worker: H.264 encoding off the main thread, and the video's stills from the same frames
 * (video-stills.ts). Protocol (from the parent):
 *   {type: "start", width, height, fps, quantizer?}  then  {type: "frame", frame: ArrayBuffer}…  then  {type: "end"}
 * Replies: {type: "consumed", frame: ArrayBuffer} per frame taken by the encoder (its buffer, given
 * back for the parent's next frame: no new 1.6 MB buffer per frame there), {type: "mp4", mp4: ArrayBuffer,
 * thumbnail?: ArrayBuffer, spritesheet?: ArrayBuffer} at the end, or {type: "error", message}.
 */
import { encodeMp4, type EncodeMp4Options } from "./encode-mp4.ts";
import { jpegsOf, StillsSampler } from "./video-stills.ts";

declare const self: Worker;

const queue: Array<Uint8Array | null> = [];
let wake: (() => void) | null = null;

async function* frames(stills: StillsSampler): AsyncGenerator<Uint8Array> {
  for (let index = 0; ; index++) {
    while (queue.length === 0) await new Promise<void>((r) => (wake = r));
    const next = queue.shift()!;
    if (next === null) return;
    stills.add(next, index);
    yield next;
    // the encoder asks for the next frame only once it has converted this one into its own memory
    postMessage({ type: "consumed", frame: next.buffer }, [next.buffer as ArrayBuffer]);
  }
}

async function encode(opts: EncodeMp4Options) {
  const sampler = new StillsSampler(opts.width, opts.height, opts.fps);
  const mp4 = await encodeMp4(frames(sampler), opts);
  const sampled = sampler.finish();
  const jpegs = sampled ? jpegsOf(sampled) : null;
  const thumbnail = jpegs?.thumbnail.buffer;
  const spritesheet = jpegs?.spritesheet?.buffer;
  postMessage({ type: "mp4", mp4: mp4.buffer, thumbnail, spritesheet }, [mp4.buffer as ArrayBuffer, ...[thumbnail, spritesheet].filter((b) => b !== undefined)] as ArrayBuffer[]);
}

self.onmessage = (e: MessageEvent) => {
  const m = e.data as { type: string; frame?: ArrayBuffer } & EncodeMp4Options;
  if (m.type === "start") {
    encode({ width: m.width, height: m.height, fps: m.fps, quantizer: m.quantizer }).catch((err: unknown) => postMessage({ type: "error", message: (err as Error).message }));
    return;
  }
  queue.push(m.type === "frame" ? new Uint8Array(m.frame!) : null);
  wake?.();
  wake = null;
};
