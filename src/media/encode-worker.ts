/**
 * Worker: H.264 encoding off the main thread. Protocol (from the parent):
 *   {type: "start", width, height, fps, quantizer?}  then  {type: "frame", frame: ArrayBuffer}…  then  {type: "end"}
 * Replies: {type: "consumed"} per frame taken by the encoder, {type: "mp4", mp4: ArrayBuffer} at the
 * end, or {type: "error", message}.
 */
import { encodeMp4, type EncodeMp4Options } from "./encode-mp4.ts";

declare const self: Worker;

const queue: Array<Uint8Array | null> = [];
let wake: (() => void) | null = null;

async function* frames(): AsyncGenerator<Uint8Array> {
  for (;;) {
    while (queue.length === 0) await new Promise<void>((r) => (wake = r));
    const next = queue.shift()!;
    if (next === null) return;
    yield next;
    postMessage({ type: "consumed" });
  }
}

self.onmessage = (e: MessageEvent) => {
  const m = e.data as { type: string; frame?: ArrayBuffer } & EncodeMp4Options;
  if (m.type === "start") {
    encodeMp4(frames(), { width: m.width, height: m.height, fps: m.fps, quantizer: m.quantizer }).then(
      (mp4) => postMessage({ type: "mp4", mp4: mp4.buffer }, [mp4.buffer as ArrayBuffer]),
      (err: unknown) => postMessage({ type: "error", message: (err as Error).message }),
    );
    return;
  }
  queue.push(m.type === "frame" ? new Uint8Array(m.frame!) : null);
  wake?.();
  wake = null;
};
