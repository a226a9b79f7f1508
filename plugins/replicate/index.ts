/**
 * replicate: image-to-video on Replicate (Kling, Seedance, Hailuo, Wan, Veo … behind one API).
 *   submit: POST /v1/models/{owner}/{name}/predictions {input} (or POST /v1/predictions {version,
 *           input}) with `webhook` + `webhook_events_filter: ["completed"]` when reelay has a public
 *           URL; the handle "<deployment>/<prediction id>" is saved by the host at once, so a
 *           restarted reelay follows the same prediction instead of paying for a second one
 *   follow: Replicate calls the hook (POST /v1/plugin-hooks/{model}/{deployment}); its Standard
 *           Webhooks signature is checked with the account's signing secret before anything is
 *           believed, and the job is woken at once; polls (GET /v1/predictions/{id}) are the
 *           fallback, slow while webhooks are on
 *   result: the output URL, downloaded by the host through its SSRF guard (size- and time-limited;
 *           a private address only with the model's allowPrivateNetwork)
 *   cancel: POST /v1/predictions/{id}/cancel
 * Statuses: starting → queued; processing → running (progress from the logs' "45%|" bars);
 * succeeded; failed (the prediction's error); canceled.
 */
import {
  buildInput, callUpstream, DEFAULT_BREAKER, definePlugin, PluginError, verifyStandardWebhook, VideoJobRouter,
  type CallOptions, type DeploymentSpec, type ModelInstance, type PluginContext, type VideoPollResult,
} from "@reelay/plugin-sdk";
import { deploymentNames, REPLICATE_API, REPLICATE_INPUT, ReplicateOptions, validateOptions } from "./options.ts";

export type { ReplicateOptions } from "./options.ts";

interface Account {
  name: string;
  base: string;
  headers: Record<string, string>;
  secretEnv?: string;
  secret?: Promise<string | undefined>;
}

interface Prediction {
  id?: unknown;
  status?: unknown;
  output?: unknown;
  error?: unknown;
  logs?: unknown;
}

/** verified "completed" deliveries waiting for their job's poll; older ones are dropped (the job was polled elsewhere) */
const PUSHED_TTL_MS = 10 * 60_000;
const MAX_PUSHED = 10_000;

export default definePlugin({
  name: "replicate",
  options: ReplicateOptions,
  validateOptions,
  create(ctx): ModelInstance {
    const o = ctx.options as ReplicateOptions;
    const single = o.deployments === undefined;
    const jobs = new VideoJobRouter(accounts(ctx, o), { breaker: single ? { ...DEFAULT_BREAKER, enabled: false } : o.routing.breaker, budget: o.routing });
    const hooks = o.webhooks && jobs.router.deployments.every((d) => ctx.video?.webhookUrl(d.name) !== undefined);
    const pushed = new Map<string, { p: Prediction; at: number }>();
    const api = async <T>(a: Account, c: Pick<CallOptions, "signal"> & Partial<Pick<CallOptions, "logger">>, path: string, init: { method?: string; json?: unknown } = {}) =>
      (await callUpstream({ url: a.base + path, headers: a.headers, ...init }, c, { timeouts: { totalMs: o.timeouts.requestMs }, fetch: ctx.fetch, ...(single ? {} : { retryRefusedMs: [] }) })).json<T>();
    const secretOf = (a: Account): Promise<string | undefined> => {
      if (a.secretEnv) return Promise.resolve(ctx.env(a.secretEnv));
      a.secret ??= api<{ key?: unknown }>(a, { signal: AbortSignal.timeout(o.timeouts.requestMs) }, "/v1/webhooks/default/secret").then(
        (r) => (typeof r?.key === "string" ? r.key : undefined),
        (err) => {
          ctx.logger.warn("could not read Replicate's webhook signing secret; its webhooks are refused until it can (jobs are still polled)", { deployment: a.name, error: (err as Error)?.message });
          a.secret = undefined;
          return undefined;
        },
      );
      return a.secret;
    };

    return {
      upstreams: () => jobs.status(),
      close: () => jobs.close(),
      video: {
        maxConcurrency: o.maxConcurrency,
        sizes: o.sizes,
        seconds: o.seconds,
        pollIntervalMs: hooks ? o.webhookPollIntervalMs : o.pollIntervalMs,

        async submit(req, call) {
          const handle = await jobs.submit(call, async (d) => {
            const a = d.target;
            const webhook = hooks ? ctx.video!.webhookUrl(a.name) : undefined;
            if (webhook) void secretOf(a); // ready before the first delivery
            const body = {
              ...(o.version ? { version: o.version } : {}),
              input: buildInput(req, o.inputMapping, o.staticInput, REPLICATE_INPUT),
              ...(webhook ? { webhook, webhook_events_filter: ["completed"] } : {}),
            };
            const p = await api<Prediction>(a, call, o.model ? `/v1/models/${o.model}/predictions` : "/v1/predictions", { json: body });
            if (typeof p?.id !== "string" || !/^[\w-]{1,200}$/.test(p.id)) throw new PluginError("malformed", "Replicate accepted the prediction but sent no id", { retryable: true });
            call.logger.debug("Replicate prediction created", { jobId: req.jobId, prediction: p.id, deployment: a.name });
            return p.id;
          });
          return { handle };
        },

        async poll(handle, call): Promise<VideoPollResult> {
          const { deployment: d, id } = jobs.locate(handle);
          let p = pushed.get(handle)?.p;
          pushed.delete(handle);
          if (!p) {
            try {
              p = await jobs.on(d, call.signal, () => api<Prediction>(d.target, call, `/v1/predictions/${encodeURIComponent(id)}`));
            } catch (err) {
              if ((err as PluginError).kind === "upstream_http" && (err as PluginError).status === 404) {
                jobs.finished(handle);
                return { state: "lost" };
              }
              throw err;
            }
          }
          const r = interpret(p);
          if (r.state !== "queued" && r.state !== "running") jobs.finished(handle);
          return r;
        },

        async cancel(handle, call) {
          const { deployment: d, id } = jobs.locate(handle);
          await api(d.target, call, `/v1/predictions/${encodeURIComponent(id)}/cancel`, { method: "POST" }).catch((err) => {
            if ((err as PluginError).status !== 404) throw err; // gone already: what cancel wants
          });
          jobs.finished(handle);
        },

        async webhook(req, call) {
          const d = jobs.router.deployments.find((x) => x.name === req.token);
          if (!d) return { accepted: false };
          const secret = await secretOf(d.target);
          if (!secret) return { accepted: false };
          const check = verifyStandardWebhook(secret, req.headers, req.body);
          if (!check.ok) {
            call.logger.warn("Replicate webhook refused", { deployment: d.name, reason: check.reason });
            return { accepted: false };
          }
          let p: Prediction;
          try {
            p = JSON.parse(new TextDecoder().decode(req.body));
          } catch {
            return { accepted: false };
          }
          if (typeof p?.id !== "string") return { accepted: false };
          const handle = `${d.name}/${p.id}`;
          const r = interpret(p);
          if (r.state === "queued" || r.state === "running") return { accepted: true };
          const now = Date.now();
          for (const [h, x] of pushed) if (now - x.at > PUSHED_TTL_MS || pushed.size >= MAX_PUSHED) pushed.delete(h); else break;
          pushed.set(handle, { p, at: now });
          return { accepted: true, wake: [handle] };
        },
      },
    };
  },
});

/** A prediction as reelay's poll result; the output URL is downloaded and checked by the host. */
function interpret(p: Prediction): VideoPollResult {
  switch (p?.status) {
    case "starting":
      return { state: "queued" };
    case "processing": {
      const progress = progressOf(p.logs);
      return progress === undefined ? { state: "running" } : { state: "running", progress };
    }
    case "succeeded": {
      const url = outputUrl(p.output);
      return url ? { state: "succeeded", url } : { state: "failed", code: "output_missing", message: "Replicate reported success but the prediction has no output URL", retryable: false };
    }
    case "failed":
      return { state: "failed", code: "replicate_failed", message: errorText(p.error), retryable: false };
    case "canceled":
    case "aborted":
      return { state: "failed", code: "cancelled", message: "the prediction was cancelled on Replicate", retryable: false };
    default:
      throw new PluginError("malformed", `Replicate reported an unknown status ${JSON.stringify(p?.status)}`, { retryable: true });
  }
}

/** The output's video URL: a URL string, the first .mp4 (else the first URL) of a list, or of an object's values. */
function outputUrl(output: unknown): string | undefined {
  const urls = (typeof output === "string" ? [output] : Array.isArray(output) ? output : output && typeof output === "object" ? Object.values(output) : [])
    .filter((u): u is string => typeof u === "string" && /^https?:\/\//i.test(u));
  return urls.find((u) => /\.mp4(\?|$)/i.test(u)) ?? urls[0];
}

/** tqdm bars in the logs ("45%|████▌     | 9/20"): the last one's percentage, as a fraction */
function progressOf(logs: unknown): number | undefined {
  if (typeof logs !== "string") return undefined;
  const tail = logs.slice(-2_000);
  let last: string | undefined;
  for (const m of tail.matchAll(/(\d{1,3})%\|/g)) last = m[1];
  return last === undefined ? undefined : Math.min(1, Number(last) / 100);
}

function errorText(error: unknown): string {
  const text = typeof error === "string" ? error : error ? JSON.stringify(error) : "the prediction failed without an error message";
  return text.length > 500 ? text.slice(0, 500) + "…" : text;
}

/** One account (key, optional signing secret) per deployment; an unset key stops the boot. */
function accounts(ctx: PluginContext, o: ReplicateOptions): Array<DeploymentSpec<Account>> {
  const list = o.deployments ?? [{ baseUrl: o.baseUrl, apiKeyEnv: o.apiKeyEnv!, webhookSecretEnv: o.webhookSecretEnv, weight: 1, maxConcurrent: undefined, name: undefined }];
  const names = deploymentNames(list);
  return list.map((d, i) => {
    const name = names[i]!;
    const who = o.deployments ? `deployment "${name}": ` : "";
    const key = ctx.env(d.apiKeyEnv);
    if (!key) throw new Error(`${who}apiKeyEnv names the environment variable ${d.apiKeyEnv}, which is not set`);
    if (d.webhookSecretEnv && !ctx.env(d.webhookSecretEnv)) throw new Error(`${who}webhookSecretEnv names the environment variable ${d.webhookSecretEnv}, which is not set`);
    const base = (d.baseUrl ?? REPLICATE_API).replace(/\/+$/, "");
    return { name, weight: d.weight, maxConcurrent: d.maxConcurrent, target: { name, base, headers: { authorization: `Bearer ${key}` }, secretEnv: d.webhookSecretEnv } };
  });
}
