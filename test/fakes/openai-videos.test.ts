/** The fake OpenAI-style videos upstream speaks what the official openai SDK sends and reads. */
import { afterAll, expect, test } from "bun:test";
import OpenAI, { toFile } from "openai";
import { startFakeOpenAIVideos } from "./openai-videos.ts";
import { ffprobe } from "../../src/media/ffprobe.test-helper.ts";
import { CONTRACT_PNG } from "@reelay/plugin-sdk/contract";

const fake = await startFakeOpenAIVideos({ apiKey: "sk-fake-videos", queueMs: 20, runMs: 100, allowedSeconds: ["4", "8", "12"] });
afterAll(() => fake.stop());
const thrown = (p: PromiseLike<unknown>) => Promise.resolve(p).then(() => { throw new Error("resolved"); }, (e) => e);
const openai = new OpenAI({ baseURL: fake.url, apiKey: "sk-fake-videos", maxRetries: 0 });

test("the official SDK: create with an input_reference file, poll to completed, download a real MP4, list, delete", async () => {
  const created = await openai.videos.create({ model: "sora-2", prompt: "a wave", seconds: "4", size: "720x1280", input_reference: await toFile(CONTRACT_PNG, "ref.png", { type: "image/png" }) });
  expect(created).toMatchObject({ object: "video", status: "queued", seconds: "4", size: "720x1280" });
  expect(fake.calls[0]!.fields).toMatchObject({ model: "sora-2", prompt: "a wave", seconds: "4", size: "720x1280", input_reference: { file: "ref.png", type: "image/png", bytes: CONTRACT_PNG.byteLength } });
  let done = await openai.videos.create({ model: "sora-2", prompt: "a wave", seconds: "4", size: "1280x720" });
  while (done.status === "queued" || done.status === "in_progress") {
    await Bun.sleep(20);
    done = await openai.videos.retrieve(done.id);
  }
  expect(done).toMatchObject({ status: "completed", progress: 100 });
  const mp4 = new Uint8Array(await (await openai.videos.downloadContent(done.id)).arrayBuffer());
  expect((await ffprobe(mp4)).streams[0]).toMatchObject({ width: 1280, height: 720, nb_read_frames: "32" });
  expect((await openai.videos.list()).data.map((v) => v.id)).toContain(done.id);
  expect(await openai.videos.delete(done.id)).toEqual({ id: done.id, object: "video.deleted", deleted: true });
  expect(await thrown(openai.videos.retrieve(done.id))).toMatchObject({ status: 404 });
});

test("refusals in OpenAI's envelope: seconds not allowed, a wrong key", async () => {
  expect(await thrown(openai.videos.create({ model: "sora-2", prompt: "x", seconds: "5" as never }))).toMatchObject({ status: 400, param: "seconds", code: "invalid_value" });
  expect(await thrown(new OpenAI({ baseURL: fake.url, apiKey: "sk-wrong", maxRetries: 0 }).videos.list())).toMatchObject({ status: 401, code: "invalid_api_key" });
});
