/**
 * Load generation with wrk (Debian package `wrk`): requests/s and latency percentiles at a fixed
 * number of connections. wrk runs as its own process, so the measured server is not slowed by the
 * load generator's JavaScript.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

export function haveWrk(): boolean {
  return Bun.spawnSync(["sh", "-c", "command -v wrk"]).exitCode === 0;
}

export async function wrk(url: string, opts: { connections: number; seconds: number; threads?: number; method?: string; headers?: Record<string, string>; body?: string }): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "wrk-"));
  const script = join(dir, "req.lua");
  const lines = [`wrk.method = ${JSON.stringify(opts.method ?? "GET")}`];
  for (const [k, v] of Object.entries(opts.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (opts.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(opts.body)}`);
  lines.push(`done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %f %d\\n", summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end`);
  writeFileSync(script, lines.join("\n"));
  const proc = Bun.spawn(["wrk", "-t", String(opts.threads ?? 2), "-c", String(opts.connections), "-d", `${opts.seconds}s`, "--timeout", "10s", "-s", script, url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const m = /RESULT ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(out);
  if (!m) throw new Error("wrk failed: " + out + (await new Response(proc.stderr).text()));
  return { rps: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]), errors: Number(m[4]) };
}

export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === "number" ? (Number.isInteger(c) ? String(c) : c.toFixed(2)) : c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => String(r[i]).length)));
  const fmt = (r: Array<string | number>) => "| " + r.map((c, i) => String(c).padEnd(widths[i]!)).join(" | ") + " |";
  return [fmt(cells[0]!), "|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|", ...cells.slice(1).map(fmt)].join("\n");
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
