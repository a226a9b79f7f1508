export interface PreviewOptions {
  maxConcurrency: number;
  resultTtlMs: number;
  maxQueued: number;
  /** finished results kept for the host to poll; beyond this the oldest become "lost" */
  maxUnpolledResults: number;
  quantizer: number;
  /** a warm render worker pair unused this long is closed */
  idleWorkersMs: number;
}

const DEFAULTS: PreviewOptions = { maxConcurrency: 2, resultTtlMs: 10 * 60_000, maxQueued: 32, maxUnpolledResults: 16, quantizer: 30, idleWorkersMs: 120_000 };

const RANGES: Record<keyof PreviewOptions, [number, number]> = {
  maxConcurrency: [1, 64],
  resultTtlMs: [1_000, 24 * 3_600_000],
  maxQueued: [1, 10_000],
  maxUnpolledResults: [1, 1_000],
  quantizer: [10, 51],
  idleWorkersMs: [100, 24 * 3_600_000],
};

export function problemsWithOptions(options: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(RANGES) as Array<keyof PreviewOptions>) {
    const v = options[key];
    if (v === undefined) continue;
    const [lo, hi] = RANGES[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) problems.push(`${key}: must be an integer ${lo}..${hi}`);
  }
  return problems;
}

export function parseOptions(options: Record<string, unknown>): PreviewOptions {
  const problems = problemsWithOptions(options);
  if (problems.length) throw new Error(`preview-video options: ${problems.join("; ")}`);
  return { ...DEFAULTS, ...(Object.fromEntries(Object.keys(DEFAULTS).filter((k) => options[k] !== undefined).map((k) => [k, options[k]])) as Partial<PreviewOptions>) };
}
