import { afterAll, describe, expect, test } from "bun:test";
import { encodeMp4 } from "../media/encode-mp4.ts";
import { ffprobe } from "../media/ffprobe.test-helper.ts";
import { Mp4EncoderPool } from "./mp4-encoder-pool.ts";

const W = 64, H = 48;

/** frame f of a moving gradient, drawn into `into` (or a new buffer) */
function draw(f: number, into = new Uint8Array(W * H * 4)): Uint8Array {
  for (let i = 0, p = 0; p < W * H; p++, i += 4) {
    into[i] = (p % W) * 3 + f * 9;
    into[i + 1] = Math.floor(p / W) * 4;
    into[i + 2] = f * 11;
    into[i + 3] = 255;
  }
  return into;
}
const freshFrames = function* (n: number) { for (let f = 0; f < n; f++) yield draw(f); };
/** a plugin that draws every frame into one buffer of its own */
const reusedBuffer = async function* (n: number) {
  const buf = new Uint8Array(W * H * 4);
  for (let f = 0; f < n; f++) yield draw(f, buf);
};

describe("Mp4EncoderPool", () => {
  const pool = new Mp4EncoderPool();
  afterAll(() => pool.close());

  test("a plugin that reuses one frame buffer gets the video of its frames, and later encodes allocate no frame buffers", async () => {
    const expected = await encodeMp4(freshFrames(40), { width: W, height: H, fps: 10 }); // on this thread, no pool
    const first = await pool.encode(reusedBuffer(40), { width: W, height: H, fps: 10 });
    const allocated = pool.allocatedFrameBuffers;
    expect(allocated).toBeGreaterThan(0);
    expect(allocated).toBeLessThanOrEqual(5); // what is in flight at once, not one per frame
    const second = await pool.encode(reusedBuffer(40), { width: W, height: H, fps: 10 });
    expect(pool.allocatedFrameBuffers).toBe(allocated);
    expect(Buffer.from(first).equals(Buffer.from(expected))).toBe(true);
    expect(Buffer.from(second).equals(Buffer.from(expected))).toBe(true);
    const v = (await ffprobe(first)).streams[0];
    expect([v.width, v.height, Number(v.nb_read_frames)]).toEqual([W, H, 40]);
  });

  test("another frame size gets buffers of its size", async () => {
    const small = async function* () { for (let f = 0; f < 6; f++) yield new Uint8Array(32 * 32 * 4).fill(40 * f); };
    const before = pool.allocatedFrameBuffers;
    const mp4 = await pool.encode(small(), { width: 32, height: 32, fps: 6 });
    expect(pool.allocatedFrameBuffers).toBeGreaterThan(before);
    const v = (await ffprobe(mp4)).streams[0];
    expect([v.width, v.height, Number(v.nb_read_frames)]).toEqual([32, 32, 6]);
  });
});
