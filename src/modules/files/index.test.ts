/**
 * The Files API with the official `openai` SDK (only base URL and key changed): upload from a file
 * stream, retrieve, list with cursor pages and the purpose filter, content (a file of several
 * blob-store parts comes back byte for byte), delete, per-account isolation, the streaming size
 * limit (declared and chunked uploads), and expiry.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";

const LIMIT = 10 * 1024 * 1024;
let s: TestServer;
let dir: string;
const client = async () => {
  const { key } = await s.newClient();
  return { openai: new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 }), key };
};

beforeAll(async () => {
  s = await startTestServer({ REELAY_FILES_MAX_BYTES: String(LIMIT) });
  dir = mkdtempSync(join(tmpdir(), "reelay-files-"));
}, 60_000);
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const status = async (p: Promise<unknown>) => p.then(() => 200, (e: any) => e.status as number);

describe("openai SDK files", () => {
  test("create from a file stream, retrieve, content, list, delete", async () => {
    const { openai } = await client();
    const path = join(dir, "requests.jsonl");
    const text = Array.from({ length: 50 }, (_, i) => JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/embeddings", body: { model: "m", input: `line ${i}` } })).join("\n") + "\n";
    writeFileSync(path, text);
    const f = await openai.files.create({ file: createReadStream(path), purpose: "batch" });
    expect(f).toMatchObject({ object: "file", bytes: Buffer.byteLength(text), filename: "requests.jsonl", purpose: "batch", status: "processed" });
    expect(f.id).toMatch(/^file-/);
    expect(f.expires_at! - f.created_at).toBe(30 * 86_400);
    expect(await openai.files.retrieve(f.id)).toEqual(f);
    expect(await (await openai.files.content(f.id)).text()).toBe(text);
    const listed = await openai.files.list();
    expect(listed.data.map((x) => x.id)).toEqual([f.id]);
    expect(await openai.files.delete(f.id)).toEqual({ id: f.id, object: "file", deleted: true });
    expect(await status(openai.files.retrieve(f.id))).toBe(404);
    expect(await status(openai.files.content(f.id))).toBe(404);
    expect(await status(openai.files.delete(f.id))).toBe(404);
  });

  test("a file of several blob-store parts comes back byte for byte", async () => {
    const { openai } = await client();
    const bytes = new Uint8Array(9 * 1024 * 1024 + 123);
    for (let i = 0; i < bytes.length; i += 4096) crypto.getRandomValues(bytes.subarray(i, Math.min(bytes.length, i + 4096)));
    const f = await openai.files.create({ file: await toFile(bytes, "big.bin"), purpose: "user_data" });
    expect(f.bytes).toBe(bytes.length);
    const back = new Uint8Array(await (await openai.files.content(f.id)).arrayBuffer());
    expect(back.length).toBe(bytes.length);
    expect(Buffer.compare(Buffer.from(back), Buffer.from(bytes))).toBe(0);
  });

  test("list: newest first, cursor pages, the purpose filter", async () => {
    const { openai } = await client();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await openai.files.create({ file: await toFile(Buffer.from(`f${i}`), `f${i}.txt`), purpose: i % 2 ? "user_data" : "batch" })).id);
    const first = await openai.files.list({ limit: 2 });
    expect(first.data.map((f) => f.id)).toEqual([ids[4], ids[3]]);
    expect(first.hasNextPage()).toBe(true);
    const all: string[] = [];
    for await (const f of await openai.files.list({ limit: 2 })) all.push(f.id);
    expect(all).toEqual([...ids].reverse());
    expect((await openai.files.list({ purpose: "batch" })).data.map((f) => f.id)).toEqual([ids[4], ids[2], ids[0]]);
  });

  test("another account's file is a 404 for every route", async () => {
    const a = await client();
    const b = await client();
    const f = await a.openai.files.create({ file: await toFile(Buffer.from("secret"), "s.txt"), purpose: "user_data" });
    expect(await status(b.openai.files.retrieve(f.id))).toBe(404);
    expect(await status(b.openai.files.content(f.id))).toBe(404);
    expect(await status(b.openai.files.delete(f.id))).toBe(404);
    expect((await b.openai.files.list()).data).toEqual([]);
    expect((await a.openai.files.retrieve(f.id)).id).toBe(f.id);
  });

  test("past the size limit: 413, nothing kept — declared or chunked", async () => {
    const { openai, key } = await client();
    const e = await openai.files.create({ file: await toFile(new Uint8Array(LIMIT + 1), "big.bin"), purpose: "batch" }).catch((x) => x);
    expect(e.status).toBe(413);
    expect(e.error).toMatchObject({ code: "payload_too_large", param: "file" });
    // chunked: no Content-Length, counted as it arrives
    const boundary = "----reelay-test";
    const enc = new TextEncoder();
    const chunk = new Uint8Array(1024 * 1024);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) { c.enqueue(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n\r\n`)); },
      pull(c) {
        if (sent > LIMIT + 2 * chunk.length) { c.enqueue(enc.encode(`\r\n--${boundary}--\r\n`)); return c.close(); }
        sent += chunk.length;
        c.enqueue(chunk);
      },
    });
    const res = await fetch(s.url + "/v1/files", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` }, body, duplex: "half" } as RequestInit).catch(() => null);
    if (res) {
      expect(res.status).toBe(413);
      expect(((await res.json()) as any).error.code).toBe("payload_too_large");
    }
    expect((await openai.files.list()).data).toEqual([]);
  });

  test("refusals: a purpose it does not take, no file", async () => {
    const { openai, key } = await client();
    const e = await openai.files.create({ file: await toFile(Buffer.from("x"), "x.txt"), purpose: "fine-tune" as any }).catch((x) => x);
    expect([e.status, e.error.param]).toEqual([400, "purpose"]);
    const form = new FormData();
    form.set("purpose", "batch");
    const res = await fetch(s.url + "/v1/files", { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.param).toBe("file");
    expect((await openai.files.list()).data).toEqual([]);
  });
});

describe("expiry", () => {
  test("a file past REELAY_FILES_TTL_SECONDS is gone (404, not listed)", async () => {
    const s2 = await startTestServer({ REELAY_FILES_TTL_SECONDS: "1" });
    try {
      const { key } = await s2.newClient();
      const openai = new OpenAI({ apiKey: key, baseURL: s2.url + "/v1", maxRetries: 0 });
      const f = await openai.files.create({ file: await toFile(Buffer.from("short-lived"), "a.txt"), purpose: "user_data" });
      expect(f.expires_at! - f.created_at).toBe(1);
      expect(await (await openai.files.content(f.id)).text()).toBe("short-lived");
      await Bun.sleep(1_100);
      expect(await status(openai.files.retrieve(f.id))).toBe(404);
      expect((await openai.files.list()).data).toEqual([]);
    } finally {
      await s2.close();
    }
  }, 60_000);
});
