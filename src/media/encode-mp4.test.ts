import { describe, expect, test } from "bun:test";
import { encodeMp4, Mp4EncodeError } from "./encode-mp4.ts";
import { isFaststart } from "./mp4-faststart.ts";
import { ffprobe } from "./ffprobe.test-helper.ts";

function* gradientFrames(width: number, height: number, count: number) {
  for (let f = 0; f < count; f++) {
    const rgba = new Uint8Array(width * height * 4);
    for (let i = 0, p = 0; p < width * height; p++, i += 4) {
      rgba[i] = (p % width) + f * 4;
      rgba[i + 1] = Math.floor(p / width) * 2;
      rgba[i + 2] = 128;
      rgba[i + 3] = 255;
    }
    yield rgba;
  }
}

describe("encodeMp4", () => {
  test("writes a faststart H.264 yuv420p MP4 ffprobe accepts", async () => {
    const mp4 = await encodeMp4(gradientFrames(64, 48, 20), { width: 64, height: 48, fps: 10 });
    expect(isFaststart(mp4)).toBe(true);
    const probe = await ffprobe(mp4);
    const v = probe.streams[0];
    expect([v.codec_name, v.pix_fmt, v.width, v.height]).toEqual(["h264", "yuv420p", 64, 48]);
    expect(Number(v.nb_read_frames)).toBe(20);
    expect(Number(probe.format.duration)).toBeCloseTo(2, 1);
  });

  test("accepts async iterables and encodes the same frames to the same bytes", async () => {
    async function* asyncFrames() { yield* gradientFrames(32, 32, 8); }
    const a = await encodeMp4(asyncFrames(), { width: 32, height: 32, fps: 16 });
    const b = await encodeMp4(gradientFrames(32, 32, 8), { width: 32, height: 32, fps: 16 });
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  test("the same frames a few seconds apart give the same bytes (no wall-clock timestamps in the header)", async () => {
    const a = await encodeMp4(gradientFrames(32, 32, 4), { width: 32, height: 32, fps: 16 });
    await Bun.sleep(1_100); // minimp4 stamps seconds: the next encode lands in another second
    const b = await encodeMp4(gradientFrames(32, 32, 4), { width: 32, height: 32, fps: 16 });
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  test("two encodes interleaved on the event loop do not mix their output", async () => {
    async function* slow(w: number, n: number) { for (const f of gradientFrames(w, 32, n)) { await Bun.sleep(1); yield f; } }
    const [a, b] = await Promise.all([
      encodeMp4(slow(32, 6), { width: 32, height: 32, fps: 16 }),
      encodeMp4(slow(48, 9), { width: 48, height: 32, fps: 16 }),
    ]);
    const [pa, pb] = await Promise.all([ffprobe(a), ffprobe(b)]);
    expect([pa.streams[0].width, Number(pa.streams[0].nb_read_frames)]).toEqual([32, 6]);
    expect([pb.streams[0].width, Number(pb.streams[0].nb_read_frames)]).toEqual([48, 9]);
  });

  test("rejects odd sizes, wrong frame sizes and empty input", async () => {
    await expect(encodeMp4([], { width: 33, height: 32, fps: 16 })).rejects.toBeInstanceOf(Mp4EncodeError);
    await expect(encodeMp4([new Uint8Array(10)], { width: 32, height: 32, fps: 16 })).rejects.toThrow(/RGBA needs 4096/);
    await expect(encodeMp4([], { width: 32, height: 32, fps: 16 })).rejects.toThrow(/no frames/);
    // and still works afterwards
    expect((await encodeMp4(gradientFrames(32, 32, 1), { width: 32, height: 32, fps: 16 })).length).toBeGreaterThan(100);
  });

  test("leaves no process-wide error handlers behind", async () => {
    await encodeMp4(gradientFrames(16, 16, 1), { width: 16, height: 16, fps: 16 });
    expect(process.listeners("unhandledRejection").some((l) => String(l).includes("abort("))).toBe(false);
  });
});
