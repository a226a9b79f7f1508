/**
 * A .cpuprofile of reelay by part of the request path (`bun bench/lib/profile-parts.ts <file>`):
 * each busy sample goes to the innermost frame on its stack that belongs to one of the parts below
 * (by source file), else to "event loop / server native" (a native frame with no JS caller) or
 * "other". Used for docs/benchmarks.md's issue-32 profile table; profile-top.ts lists functions.
 */
import { readFileSync } from "node:fs";
interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
const file = process.argv[2]!;
const prof = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const cats: Array<[string, (n: Node) => boolean]> = [
  ["fetch (native, upstream call)", (n) => n.callFrame.functionName === "fetch" && n.callFrame.url === ""],
  ["settlement journal", (n) => n.callFrame.url.endsWith("billing/journal.ts")],
  ["request log + logger", (n) => /ops\/request-log\.ts|src\/logger\.ts|pino|sonic-boom/.test(n.callFrame.url)],
  ["metrics (prom-client, telemetry)", (n) => /prom-client|ops\/telemetry\.ts|ops\/request-metrics\.ts/.test(n.callFrame.url)],
  ["auth", (n) => /auth\/authenticate-key|accounts\/api-keys|require-key/.test(n.callFrame.url)],
  ["limiter", (n) => /rate-limit\//.test(n.callFrame.url)],
  ["hold estimate / token count", (n) => /src\/text\//.test(n.callFrame.url)],
  ["postgres.js + drizzle", (n) => /node_modules\/(postgres|drizzle-orm)\//.test(n.callFrame.url) || /^node:net|internal:streams/.test(n.callFrame.url)],
  ["billing engine", (n) => /src\/billing\//.test(n.callFrame.url)],
  ["upstream SDK (deadlines, body read, router)", (n) => /plugin-sdk\/|packages\/plugin-sdk|openai-compatible|plugin-host\//.test(n.callFrame.url)],
  ["chat pipeline (service, close-request)", (n) => /modules\/chat\//.test(n.callFrame.url)],
  ["elysia + app hooks", (n) => /elysia|src\/app\.ts|src\/http\/|startup-gate|src\/boot\.ts/.test(n.callFrame.url)],
];
const res = new Map<string, number>(); let busy = 0;
for (const id of prof.samples) {
  const top = byId.get(id)!;
  if (["(idle)", "(program)", "(root)"].includes(top.callFrame.functionName)) continue;
  busy++;
  let cat = "other";
  let hasJs = false;
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur)!;
    const hit = cats.find(([, f]) => f(n));
    if (hit) { cat = hit[0]; break; }
  }
  if (cat === "other") {
    let chain = 0; for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) chain++;
    if (chain <= 2) cat = "event loop / server native (no JS caller)";
  }
  res.set(cat, (res.get(cat) ?? 0) + 1);
}
console.log(`${busy} busy samples`);
for (const [k, v] of [...res].sort((a, b) => b[1] - a[1])) console.log(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${String(v).padStart(5)}  ${k}`);
