/**
 * Price plans, on every database reelay supports (plans-postgres.test.ts, plans-pglite.test.ts):
 * a plan from the models file (−12.5 %, one model's input price overridden) and one made through
 * the admin API (+7.25 %, the video price overridden). On every route — chat, streamed chat,
 * Responses, Messages, embeddings, video — the charge is the exact price of the usage on the plan,
 * rounded up once (computed here from the usage row's own counts with BigInt, not with reelay's
 * priceOf), the usage row names the plan and the prices, the balance moves by exactly the charges,
 * and the hold is the plan's price too: an account funded with exactly N requests at the plan's
 * price makes exactly N. `/v1/models` shows each key its own prices.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { expectInvariants } from "../billing/support.ts";
import { budgetModels, CHAT, EMBED_PER_MILLION, messages, routes, startBudgetServer, VIDEO_PER_SECOND, type BudgetServer } from "./support.ts";

const FILE_PLAN = { id: "gold", name: "Gold", adjustmentPercent: -12.5, models: { "chat-b": { inputPerMillion: 1_000_001 } } };

/** ⌈Σ units × rate × factor / (10^6 × 10^4)⌉ with factor 10,000 + bp (or 10,000 for an overridden price) */
function expected(u: { prompt?: number | null; completion?: number | null; seconds?: number | null }, rates: { input?: number; output?: number; perSecond?: number }, bp: number, overridden: string[] = []) {
  const f = (k: string) => BigInt(overridden.includes(k) ? 10_000 : 10_000 + bp);
  const n = BigInt(u.prompt ?? 0) * BigInt(rates.input ?? 0) * f("inputPerMillion") + BigInt(u.completion ?? 0) * BigInt(rates.output ?? 0) * f("outputPerMillion") + BigInt(u.seconds ?? 0) * BigInt(rates.perSecond ?? 0) * 1_000_000n * f("perSecond");
  const d = 10_000_000_000n;
  return Number((n + d - 1n) / d);
}

export function describePlans(name: string, pglite: boolean) {
  describe(`price plans on ${name}`, () => {
    let fake: FakeOpenAI;
    let server: BudgetServer;
    let dir: string;
    beforeAll(async () => {
      fake = await startFakeOpenAI({ tokens: 8 });
      const m = budgetModels(fake.url, { plans: [FILE_PLAN] });
      dir = m.dir;
      server = await startBudgetServer(m.env, { pglite });
    }, 120_000);
    afterAll(async () => {
      await server?.close();
      await fake?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const onPlan = async (plan: string | null, credits = 100_000_000) => {
      const c = await server.client({ credits });
      const res = await server.admin(`/admin/accounts/${c.accountId}/plan`, { method: "PUT", body: { plan } });
      expect(res.status).toBe(200);
      return c;
    };

    test("every route is charged the plan's exact price, rounded up once, and says so on its usage row", async () => {
      const put = await server.admin("/admin/plans/silver", { method: "PUT", body: { name: "Silver", adjustment_percent: 7.25, models: { video: { perSecond: 12_345 } } } });
      expect(put.status).toBe(200);
      expect(await put.json()).toMatchObject({ id: "silver", object: "price_plan", adjustment_percent: 7.25, source: "api", accounts: 0 });
      for (const [plan, bp, rates, overridden] of [
        ["gold", -1250, { chat: CHAT.input, chatB: 1_000_001, video: VIDEO_PER_SECOND }, { chatB: ["inputPerMillion"], video: [] as string[] }],
        ["silver", 725, { chat: CHAT.input, chatB: CHAT.input, video: 12_345 }, { chatB: [] as string[], video: ["perSecond"] }],
      ] as const) {
        const c = await onPlan(plan);
        const ok = async (res: Response) => {
          expect({ plan, status: res.status }).toEqual({ plan, status: res.status < 300 ? res.status : 200 });
          return res.text();
        };
        await ok(await routes.chat(server.url, c.key));
        await ok(await routes.chat(server.url, c.key, "chat-b"));
        await ok(await routes.stream(server.url, c.key));
        await ok(await routes.responses(server.url, c.key));
        await ok(await fetch(`${server.url}/v1/messages`, { method: "POST", headers: { "x-api-key": c.key, "anthropic-version": "2023-06-01", "content-type": "application/json" }, body: JSON.stringify({ model: "chat", max_tokens: CHAT.tokens, messages }) }));
        await ok(await routes.embed(server.url, c.key, ["one two three", "four five six seven"]));
        const v = await routes.video(server.url, c.key, 3);
        expect(v.status).toBe(202);
        const job = (await v.json()) as { id: string };
        const final = async () => (routes.usage(server.url, c.key)).then((u) => u.some((r: any) => r.ref === job.id));
        for (let i = 0; i < 300 && !(await final()); i++) await Bun.sleep(50);
        const usage = await routes.usage(server.url, c.key);
        expect(usage.map((u: any) => u.route).sort()).toEqual(["/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/messages", "/v1/responses", "/v1/videos/generations"]);
        let total = 0;
        for (const u of usage) {
          const r = u.model === "chat-b" ? { input: rates.chatB, output: CHAT.output } : u.model === "chat" ? { input: rates.chat, output: CHAT.output } : u.model === "embed" ? { input: EMBED_PER_MILLION } : { perSecond: rates.video };
          const over = u.model === "chat-b" ? overridden.chatB : u.model === "video" ? overridden.video : [];
          const want = expected({ prompt: u.prompt_tokens, completion: u.completion_tokens, seconds: u.seconds }, r, bp, [...over]);
          expect({ plan, route: u.route, model: u.model, cost: u.cost, planOnRow: u.plan }).toEqual({ plan, route: u.route, model: u.model, cost: want, planOnRow: plan });
          expect(u.pricing).toMatchObject({ adjustmentBp: bp, overridden: [...over] });
          expect(u.prompt_tokens ?? u.seconds).toBeGreaterThan(0);
          total += u.cost;
        }
        const acct = await routes.account(server.url, c.key);
        expect({ plan, balance: acct.balance, held: acct.held, shown: acct.plan }).toEqual({ plan, balance: 100_000_000 - total, held: 0, shown: plan });
        await expectInvariants(server.deps.database.db, [c.accountId]);
      }
    }, 120_000);

    test("holds are the plan's prices: an account funded for exactly 3 chats at −12.5 % makes 3, the 4th is refused; at list prices it makes 2", async () => {
      const planCost = expected({ prompt: CHAT.prompt, completion: CHAT.tokens }, { input: CHAT.input, output: CHAT.output }, -1250);
      const listCost = CHAT.prompt * 3 + CHAT.tokens * 15;
      expect(planCost).toBeLessThan(listCost);
      const gold = await onPlan("gold", 3 * planCost);
      const list = await onPlan(null, 3 * planCost);
      for (let i = 0; i < 3; i++) expect((await routes.chat(server.url, gold.key)).status).toBe(200);
      const refused = await routes.chat(server.url, gold.key);
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as any).error.message).toContain(`needs $0.${String(planCost).padStart(6, "0")} (${planCost} micro-dollars) but only $0.000000 (0 micro-dollars)`);
      expect((await routes.chat(server.url, list.key)).status).toBe(200);
      expect((await routes.chat(server.url, list.key)).status).toBe(200);
      expect((await routes.chat(server.url, list.key)).status).toBe(402);
      await server.deps.billing.sync();
      await expectInvariants(server.deps.database.db, [gold.accountId, list.accountId]);
    }, 60_000);

    test("/v1/models shows each key its own prices; plans list, file plans are read-only, a plan in use cannot be deleted, a bad plan is 400", async () => {
      const gold = await onPlan("gold");
      const list = await onPlan(null);
      const models = async (key: string) => Object.fromEntries(((await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data.map((m: any) => [m.id, m.pricing]));
      expect((await models(gold.key))["chat-b"]).toEqual({ input_per_million: 1_000_001, output_per_million: 13_125_000, plan: "gold" });
      expect((await models(gold.key)).chat).toEqual({ input_per_million: 2_625_000, output_per_million: 13_125_000, plan: "gold" });
      expect((await models(list.key)).chat).toEqual({ input_per_million: CHAT.input, output_per_million: CHAT.output });
      const plans = ((await (await server.admin("/admin/plans")).json()) as any).data;
      expect(plans.find((p: any) => p.id === "gold")).toMatchObject({ source: "file", adjustment_percent: -12.5 });
      expect((await server.admin("/admin/plans/gold", { method: "PUT", body: { adjustment_percent: 0 } })).status).toBe(409);
      expect((await server.admin("/admin/plans/silver", { method: "DELETE" })).status).toBe(409); // the first test's account is on it
      expect((await server.admin("/admin/plans/bronze", { method: "PUT", body: { adjustment_percent: 1.234 } })).status).toBe(400);
      expect((await server.admin("/admin/plans/bronze", { method: "PUT", body: { models: { "no-such-model": { perSecond: 1 } } } })).status).toBe(400);
      expect((await server.admin(`/admin/accounts/${list.accountId}/plan`, { method: "PUT", body: { plan: "no-such-plan" } })).status).toBe(404);
      expect((await server.admin("/admin/plans/bronze", { method: "PUT", body: { adjustment_percent: -100 } })).status).toBe(200);
      const free = await onPlan("bronze", 0);
      expect((await routes.chat(server.url, free.key)).status).toBe(200); // −100 %: free, even with no credits
      expect((await server.admin(`/admin/accounts/${free.accountId}/plan`, { method: "PUT", body: { plan: null } })).status).toBe(200);
      expect((await server.admin("/admin/plans/bronze", { method: "DELETE" })).status).toBe(200);
      expect((await server.admin("/admin/plans/bronze")).status).toBe(404);
    }, 60_000);
  });
}
