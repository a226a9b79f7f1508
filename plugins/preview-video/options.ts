/** Per-model options of preview-video: a schema the host validates at boot (defaults filled in). */
import { Type, type Static } from "@reelay/plugin-sdk";

export const DEFAULTS = { maxConcurrency: 2, resultTtlMs: 10 * 60_000, maxQueued: 32, maxUnpolledResults: 16, quantizer: 30, idleWorkersMs: 120_000, minRenderMs: 0 };

const int = (minimum: number, maximum: number, fallback: number, description: string) => Type.Integer({ minimum, maximum, default: fallback, description });

export const PreviewOptions = Type.Object({
  maxConcurrency: int(1, 64, DEFAULTS.maxConcurrency, "renders at once (one keeps a core busy drawing, the host's encoder another)"),
  resultTtlMs: int(1_000, 24 * 3_600_000, DEFAULTS.resultTtlMs, "how long a finished result waits to be polled"),
  maxQueued: int(1, 10_000, DEFAULTS.maxQueued, "jobs waiting for a slot; past it a submit gets 503"),
  maxUnpolledResults: int(1, 1_000, DEFAULTS.maxUnpolledResults, "finished results kept for the host to poll; beyond, the oldest become lost"),
  quantizer: int(10, 51, DEFAULTS.quantizer, "H.264 QP: 10 best … 51 smallest"),
  idleWorkersMs: int(100, 24 * 3_600_000, DEFAULTS.idleWorkersMs, "a warm frames worker unused this long is closed"),
  minRenderMs: int(0, 600_000, DEFAULTS.minRenderMs, "a render takes at least this long, its frames paced evenly (a demo or a test that shows progress the same way on any machine); 0 renders as fast as the CPU allows"),
}, { additionalProperties: false });

export type PreviewOptions = Static<typeof PreviewOptions>;

/** The host fills defaults in; this does too, for code that creates the renderer directly (tests, benchmarks). */
export function parseOptions(options: Record<string, unknown>): PreviewOptions {
  return { ...DEFAULTS, ...(Object.fromEntries(Object.keys(DEFAULTS).filter((k) => options[k] !== undefined).map((k) => [k, options[k]])) as Partial<PreviewOptions>) };
}
