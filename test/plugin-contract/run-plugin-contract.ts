/**
 * The shared plugin contract (Hono's router/common.case.test.ts pattern): every plugin, built-in or
 * external, runs this one suite from its own test file:
 *
 *   runPluginContract("preview-video", () => plugin, { options: {} });
 *
 * It checks what the host relies on and nothing provider-specific: a valid declaration, options
 * validated without throwing, at least one capability, and per capability the shapes the routes
 * and the scheduler consume (chat completions and SSE events, embeddings in input order with usage,
 * video handles that poll to an MP4 or a failure, unknown handles polling as "lost", cancel that
 * stops a job, close() safe to call twice).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { encode as encodePng } from "fast-png";
import { PLUGIN_API_VERSION, type ModelInstance, type PluginContext, type ReelayPlugin, type VideoPollResult, type VideoRequest } from "../../src/plugin-sdk/index.ts";
import { testPluginContext } from "../../src/plugin-sdk/testing.ts";

export interface ContractOptions {
  /** the capabilities the created instance must have, exactly; only their tests are registered */
  capabilities: Array<"chat" | "embeddings" | "video">;
  /** model options passed to validateOptions and create (called lazily, after `setup`) */
  options?: Record<string, unknown> | (() => Record<string, unknown>);
  /** context overrides (env vars, fetch, …) */
  ctx?: Partial<PluginContext> & { envVars?: Record<string, string> };
  setup?: () => Promise<void> | void;
  teardown?: () => Promise<void> | void;
  chat?: { body?: Record<string, unknown> };
  embeddings?: { inputs?: string[] };
  video?: { request?: Partial<VideoRequest>; timeoutMs?: number };
}

/** 32x32 RGB gradient PNG, a valid source image for video plugins. */
export const CONTRACT_PNG: Uint8Array = encodePng({
  width: 32, height: 32, channels: 3,
  data: Uint8Array.from({ length: 32 * 32 * 3 }, (_, i) => (i % 3 === 0 ? (i / 3) % 32 : i % 3 === 1 ? Math.floor(i / 96) * 8 : 128)),
});

const VALID_STATES = new Set(["queued", "running", "succeeded", "failed", "lost"]);
const signal = () => new AbortController().signal;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function runPluginContract(name: string, makePlugin: () => ReelayPlugin | Promise<ReelayPlugin>, opts: ContractOptions) {
  describe(`plugin contract: ${name}`, () => {
    let plugin: ReelayPlugin;
    let instance: ModelInstance;
    const options = () => (typeof opts.options === "function" ? opts.options() : (opts.options ?? {}));

    beforeAll(async () => {
      await opts.setup?.();
      plugin = await makePlugin();
      instance = await plugin.create(testPluginContext(options(), opts.ctx));
      // as the host does before the first capability call (src/registry/model-loader.ts)
      await instance.load?.({ signal: signal() });
    });
    afterAll(async () => {
      await instance?.close?.();
      await opts.teardown?.();
    });

    test("declares a name, the API version, create(), and well-formed models", () => {
      expect(plugin.name).toMatch(/^[a-z0-9][\w.-]*$/i);
      expect(plugin.apiVersion).toBe(PLUGIN_API_VERSION);
      expect(typeof plugin.create).toBe("function");
      const ids = (plugin.models ?? []).map((m) => m.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const m of plugin.models ?? []) {
        expect(m.id).toMatch(/^[A-Za-z0-9][\w.:/-]{0,127}$/);
        for (const price of Object.values(m.pricing)) expect(Number.isSafeInteger(price) && price! >= 0).toBe(true);
      }
    });

    test("validateOptions accepts these options and answers (never throws) on nonsense", () => {
      if (!plugin.validateOptions) return;
      expect(plugin.validateOptions(options())).toEqual([]);
      const answer = plugin.validateOptions({ maxConcurrency: "many", baseUrl: 42, timeouts: "soon", "contract-bogus": {} });
      expect(Array.isArray(answer) && answer.every((p) => typeof p === "string")).toBe(true);
    });

    test(`create gives exactly the capabilities ${opts.capabilities.join(", ")}`, () => {
      expect((["chat", "embeddings", "video"] as const).filter((c) => instance[c])).toEqual([...opts.capabilities].sort());
    });

    if (opts.capabilities.includes("chat")) describe("chat", () => {
      const body = () => opts.chat?.body ?? { model: "contract", messages: [{ role: "user", content: "Say something." }], max_tokens: 8 };
      test("complete returns a completion with choices", async () => {
        const { completion, usage } = await instance.chat!.complete(body(), { signal: signal() });
        expect(Array.isArray(completion.choices)).toBe(true);
        expect(completion.choices.length).toBeGreaterThan(0);
        if (usage) expect(usage.prompt_tokens).toBeGreaterThanOrEqual(0);
      });
      test("stream yields SSE events whose data is JSON text or [DONE]", async () => {
        const events = [];
        for await (const e of await instance.chat!.stream({ ...body(), stream: true }, { signal: signal() })) events.push(e);
        expect(events.length).toBeGreaterThan(1);
        for (const e of events) {
          expect(typeof e.data).toBe("string");
          if (e.data !== "[DONE]") expect(JSON.parse(e.data)).toEqual(e.json);
        }
      });
      test("an aborted signal rejects", async () => {
        const c = new AbortController();
        c.abort(new Error("client went away"));
        expect(await instance.chat!.complete(body(), { signal: c.signal }).then(() => "resolved", () => "rejected")).toBe("rejected");
      });
    });

    if (opts.capabilities.includes("embeddings")) describe("embeddings", () => {
      test("embed returns one vector per input, in order, with usage", async () => {
        const inputs = opts.embeddings?.inputs ?? ["first input", "a second, longer input", "third"];
        const r = await instance.embeddings!.embed({ body: { model: "contract", input: inputs }, inputs }, { signal: signal() });
        expect(r.data.map((d) => d.index)).toEqual(inputs.map((_, i) => i));
        for (const d of r.data) expect(typeof d.embedding === "string" || d.embedding.length > 0).toBe(true);
        expect(r.usage.prompt_tokens).toBeGreaterThan(0);
        if (instance.embeddings!.countTokens) expect((await instance.embeddings!.countTokens(inputs)).length).toBe(inputs.length);
      });
    });

    if (opts.capabilities.includes("video")) describe("video", () => {
      const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
        jobId: `vid_contract_${crypto.randomUUID().slice(0, 8)}`, prompt: "a slow zoom", image: { bytes: CONTRACT_PNG, mime: "image/png" },
        width: 480, height: 832, seconds: 1, seed: 7, ...opts.video?.request, ...over,
      });
      const pollUntilFinal = async (handle: string): Promise<{ last: VideoPollResult; seen: string[] }> => {
        const v = instance.video!;
        const until = Date.now() + (opts.video?.timeoutMs ?? 30_000);
        const seen: string[] = [];
        for (;;) {
          const r = await v.poll(handle, { signal: signal() });
          expect(VALID_STATES.has(r.state)).toBe(true);
          seen.push(r.state);
          if (r.state === "running" && r.progress !== undefined) expect(r.progress >= 0 && r.progress <= 1).toBe(true);
          if (r.state !== "queued" && r.state !== "running") return { last: r, seen };
          if (Date.now() > until) throw new Error(`job still ${r.state} after ${opts.video?.timeoutMs ?? 30_000} ms`);
          await sleep(Math.min(v.pollIntervalMs ?? 200, 200));
        }
      };

      test("declares sane scheduling hints", () => {
        const { maxConcurrency, pollIntervalMs } = instance.video!;
        if (maxConcurrency !== undefined) expect(Number.isInteger(maxConcurrency) && maxConcurrency >= 1).toBe(true);
        if (pollIntervalMs !== undefined) expect(pollIntervalMs).toBeGreaterThan(0);
      });

      test("submit gives a handle that polls through queued/running to an MP4", async () => {
        const { handle } = await instance.video!.submit(request(), { signal: signal() });
        expect(typeof handle).toBe("string");
        expect(handle.length).toBeGreaterThan(0);
        const { last } = await pollUntilFinal(handle);
        expect(last.state).toBe("succeeded");
        if (last.state === "succeeded" && "mp4" in last) expect(new TextDecoder().decode(last.mp4.subarray(4, 8))).toBe("ftyp");
        else if (last.state === "succeeded") expect(last.url).toMatch(/^https?:\/\//);
      });

      test("an unknown handle polls as lost", async () => {
        expect(await instance.video!.poll(`unknown-${crypto.randomUUID()}`, { signal: signal() })).toEqual({ state: "lost" });
      });

      test("a cancelled job never succeeds", async () => {
        expect(typeof instance.video!.cancel).toBe("function");
        const { handle } = await instance.video!.submit(request({ seconds: 3 }), { signal: signal() });
        await instance.video!.cancel!(handle, { signal: signal() });
        const { last } = await pollUntilFinal(handle);
        expect(["failed", "lost"]).toContain(last.state);
      });
    });

    test("close() may be called twice, also on an instance that was never loaded", async () => {
      // a second instance, so closing it does not disturb the shared one
      const other = await plugin.create(testPluginContext(options(), opts.ctx));
      await other.close?.();
      await other.close?.();
    });
  });
}
