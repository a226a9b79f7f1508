/**
 * The operator's two storage settings: a short retention (responses disappear when it ends, and the
 * sweeper deletes them), and REELAY_RESPONSES_STORE=off (stateless: nothing kept, and what needs a
 * stored response is refused with a 400 naming the field).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { replyText } from "../../../test/fakes/openai-upstream.ts";
import { startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";
import { sweepExpiredResponses } from "./store.ts";

const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const rowCount = async (t: BridgeServer) => (await query<{ n: number }>(t.s.deps.database.db, sql`SELECT count(*)::int AS n FROM responses`))[0]!.n;

describe("REELAY_RESPONSES_RETENTION_SECONDS=1", () => {
  let t: BridgeServer;
  beforeAll(async () => { t = await startBridgeServer({ REELAY_RESPONSES_RETENTION_SECONDS: "1" }); }, 60_000);
  afterAll(() => t.close());

  test("a response is readable and continuable within its retention, then gone; the sweeper deletes it", async () => {
    const c = await t.newClient();
    const r = await c.openai.responses.create({ model: "chat-a", input: "hi", max_output_tokens: 4 });
    expect((await c.openai.responses.retrieve(r.id)).output_text).toBe(replyText(4));
    await Bun.sleep(1_200);
    await expect(settled(c.openai.responses.retrieve(r.id))).rejects.toMatchObject({ status: 404, code: "response_not_found" });
    await expect(settled(c.openai.responses.create({ model: "chat-a", input: "more", previous_response_id: r.id }))).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
    expect(await rowCount(t)).toBe(1);
    expect(await sweepExpiredResponses(t.s.deps.database.db)).toBe(1);
    expect(await rowCount(t)).toBe(0);
  });
});

describe("REELAY_RESPONSES_STORE=off", () => {
  let t: BridgeServer;
  beforeAll(async () => { t = await startBridgeServer({ REELAY_RESPONSES_STORE: "off" }); }, 60_000);
  afterAll(() => t.close());

  test("stateless: answers say store false, nothing is kept, and store / previous_response_id / item_reference are refused", async () => {
    const c = await t.newClient();
    const r = await c.openai.responses.create({ model: "chat-a", input: "hi", max_output_tokens: 4 });
    expect(r).toMatchObject({ store: false, output_text: replyText(4) });
    await expect(settled(c.openai.responses.retrieve(r.id))).rejects.toMatchObject({ status: 404 });
    expect(await rowCount(t)).toBe(0);
    for (const [body, param] of [
      [{ store: true }, "store"],
      [{ previous_response_id: r.id }, "previous_response_id"],
      [{ input: [{ type: "item_reference", id: r.output[0]!.id! }] }, "input[0]"],
    ] as const) {
      const err = await settled(c.openai.responses.create({ model: "chat-a", input: "hi", ...(body as object) })).then(() => null, (e) => e);
      expect({ param, status: err?.status, got: err?.param, code: err?.code }).toEqual({ param, status: 400, got: param, code: "unsupported_parameter" });
    }
    // a conversation sent whole works as everywhere else
    const whole = await c.openai.responses.create({ model: "chat-a", store: false, input: [{ role: "user", content: "hi" }, ...r.output, { role: "user", content: "more" }] as never });
    expect(whole.status).toBeDefined();
    expect(t.fake.requests.at(-1)!.body.messages).toEqual([{ role: "user", content: "hi" }, { role: "assistant", content: replyText(4) }, { role: "user", content: "more" }]);
  });
});
