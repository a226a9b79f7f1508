/**
 * A hostile upstream (the fake in its hostile modes): it quotes the Authorization header it got in
 * error bodies and stream error events, sends answers of hundreds of MB and single SSE events of
 * tens of MB. reelay never relays its upstream key, stops reading at the caps (502), and releases
 * the hold.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { moneyOf, startEdgeServer, UPSTREAM_SECRET, type EdgeServer } from "../support/edge-server.ts";

let e: EdgeServer;
beforeAll(async () => {
  e = await startEdgeServer();
});
afterAll(() => e.close());
beforeEach(() => e.fake.reset());

const messages = [{ role: "user", content: "hi" }];
async function chat(body: Record<string, unknown>, path = "/v1/chat/completions") {
  const res = await fetch(e.s.url + path, { method: "POST", headers: { authorization: `Bearer ${e.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function settledMoney() {
  for (let i = 0; i < 50; i++) {
    const m = await moneyOf(e.s, e.accountId);
    if (m.held === 0) return m;
    await Bun.sleep(100);
  }
  return moneyOf(e.s, e.accountId);
}

describe("the upstream key never reaches the client", () => {
  for (const status of [400, 401, 429, 500]) {
    test(`an upstream ${status} quoting the Authorization header it received`, async () => {
      e.fake.behave({ status, echoAuthorization: true });
      for (const stream of [false, true]) {
        const r = await chat({ model: "chat-edge", messages, stream });
        expect(r.status).toBe(status === 401 ? 502 : status >= 500 ? 502 : status);
        expect(e.fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${UPSTREAM_SECRET}`); // it was sent, and quoted back
        expect(r.text).not.toContain(UPSTREAM_SECRET);
        expect(r.text).toContain("[redacted]");
        expect(r.headers.get("x-request-id")).toMatch(/^req_/);
      }
    });
  }

  test("an error event mid-stream quoting the key", async () => {
    e.fake.behave({ errorEventAfterChunks: 2, echoAuthorization: true });
    const r = await chat({ model: "chat-edge", messages, stream: true });
    expect(r.status).toBe(200);
    expect(r.text).toContain("mid-stream");
    expect(r.text).not.toContain(UPSTREAM_SECRET);
    expect(r.text).toContain("[redacted]");
  });

  test("embeddings errors too", async () => {
    e.fake.behave({ status: 400, echoAuthorization: true });
    const r = await chat({ model: "embed-edge", input: "x" }, "/v1/embeddings");
    expect(r.status).toBe(400);
    expect(r.text).not.toContain(UPSTREAM_SECRET);
  });
});

describe("answers and events past the caps are 502, the hold released", () => {
  test("a 200 MB non-streamed answer (cap 16 MiB)", async () => {
    const before = await settledMoney();
    Bun.gc(true);
    const rss0 = process.memoryUsage().rss;
    e.fake.behave({ bodyBytes: 200 * 1024 * 1024 });
    const r = await chat({ model: "chat-edge", messages });
    const grew = (process.memoryUsage().rss - rss0) / 1048576;
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "upstream_error", code: "upstream_malformed" });
    expect(JSON.parse(r.text).error.message).toContain("larger than 16777216 bytes");
    expect(grew).toBeLessThan(120); // test process = reelay + the fake; the answer alone would be 200+ MiB
    const after = await settledMoney();
    expect([after.balance, after.held]).toEqual([before.balance, 0]);
    console.log(`hostile upstream: 200 MB answer refused at the 16 MiB cap, RSS +${grew.toFixed(0)} MiB`);
  });

  test("a 4 MiB single SSE event (cap 1 MiB) before any output: 502 upstream_malformed, nothing charged", async () => {
    const before = await settledMoney();
    e.fake.behave({ eventBytes: 4 * 1024 * 1024 });
    const r = await chat({ model: "chat-edge", messages, stream: true });
    // nothing was delivered yet, so the status can still say it
    expect(r.status).toBe(502);
    expect(JSON.parse(r.text).error).toMatchObject({ type: "upstream_error", code: "upstream_malformed" });
    const after = await settledMoney();
    expect([after.balance, after.held]).toEqual([before.balance, 0]);
  });

  test("the same event after output began: the stream ends with an SSE error event, the prompt and what was delivered charged", async () => {
    const before = await settledMoney();
    e.fake.behave({ eventBytes: 4 * 1024 * 1024, eventBytesAt: 2 });
    const r = await chat({ model: "chat-edge", messages, stream: true, stream_options: { include_usage: true } });
    expect(r.status).toBe(200); // the headers went out with the first event
    const events = r.text.split("\n\n").filter((x) => x.startsWith("data: ")).map((x) => x.slice(6));
    const content = events.filter((x) => x !== "[DONE]").map((x) => JSON.parse(x)).filter((x) => x.choices?.[0]?.delta?.content).map((x) => x.choices[0].delta.content);
    expect(content).toEqual([" one", " two"]);
    expect(JSON.parse(events.at(-1)!).error).toMatchObject({ code: "upstream_malformed" });
    const after = await settledMoney();
    expect(after.held).toBe(0);
    const [row] = (await (await fetch(e.s.url + "/v1/usage?limit=1", { headers: { authorization: `Bearer ${e.key}` } })).json()).data;
    expect(row).toMatchObject({ delivered_tokens: 2, completion_tokens: 2, status: 200 });
    expect(before.balance - after.balance).toBe(row.cost);
    expect(row.cost).toBeGreaterThan(0);
  });
});
