/** Shared helpers of the video tests: plugin/model files, images, polling, account reads. */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";

export const PRICE_PER_SECOND = 30_000;

/** A REELAY_PLUGINS_DIR holding the scripted plugin and a REELAY_MODELS_FILE with the given models. */
export function scriptedEnv(models: Array<{ id: string; options?: Record<string, unknown>; perSecond?: number }>, withPreview = false): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "reelay-vt-"));
  const plugins = join(dir, "plugins");
  require("node:fs").mkdirSync(plugins);
  writeFileSync(join(plugins, "index.mjs"), `export { default } from ${JSON.stringify(join(import.meta.dir, "../plugins/scripted-video.ts"))};\n`);
  const list = models.map((m) => ({ id: m.id, plugin: "scripted-video", options: m.options ?? {}, pricing: { perSecond: m.perSecond ?? PRICE_PER_SECOND } }));
  if (withPreview) list.push({ id: "preview-motion", plugin: "preview-video", options: {}, pricing: { perSecond: PRICE_PER_SECOND } });
  writeFileSync(join(dir, "models.json"), JSON.stringify({ builtins: false, models: list }));
  return { REELAY_PLUGINS_DIR: plugins, REELAY_MODELS_FILE: join(dir, "models.json") };
}

export function pngBase64(width = 64, height = 48): string {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (i * 37) % 251;
  return Buffer.from(encodePng({ width, height, data, channels: 3, depth: 8 })).toString("base64");
}

export function client(url: string, key: string) {
  const h = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, "content-type": "application/json", ...extra });
  return {
    submit: (body: unknown, headers: Record<string, string> = {}) => fetch(`${url}/v1/videos/generations`, { method: "POST", headers: h(headers), body: typeof body === "string" ? body : JSON.stringify(body) }),
    get: (id: string) => fetch(`${url}/v1/videos/generations/${id}`, { headers: h() }),
    cancel: (id: string) => fetch(`${url}/v1/videos/generations/${id}/cancel`, { method: "POST", headers: h() }),
    list: (q = "") => fetch(`${url}/v1/videos/generations${q}`, { headers: h() }),
    account: async () => (await (await fetch(`${url}/v1/account`, { headers: h() })).json()) as { balance: number; held: number; available: number },
    usage: async () => ((await (await fetch(`${url}/v1/usage?limit=500`, { headers: h() })).json()) as { data: Array<{ ref: string; kind: string; cost: number; seconds: number | null; status: number }> }).data,
    async waitFinal(id: string, timeoutMs = 30_000): Promise<any> {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const res = await fetch(`${url}/v1/videos/generations/${id}`, { headers: h() });
        const body: any = await res.json();
        if (res.status !== 200) throw new Error(`poll ${id}: ${res.status} ${JSON.stringify(body)}`);
        if (body.status === "completed" || body.status === "failed") return body;
        if (Date.now() > end) throw new Error(`job ${id} still ${body.status} after ${timeoutMs} ms`);
        await Bun.sleep(50);
      }
    },
  };
}
