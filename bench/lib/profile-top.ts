/**
 * Top functions of a .cpuprofile by sample count (`bun bench/lib/profile-top.ts <file> [n] [filter]`).
 * Counts samples rather than the profile's time deltas: a sample taken after the process slept
 * carries the whole sleep as its delta, which makes idle moments look like hot code.
 * Self = samples whose top frame is the function; total = samples with the function anywhere on the stack.
 */
import { readFileSync } from "node:fs";

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
const [file, nArg, filter] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file!, "utf8")) as { nodes: Node[]; samples: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: Node) => `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(/^.*node_modules\//, "~/").replace(/^.*\/(src|plugins|bench)\//, "$1/")}:${n.callFrame.lineNumber + 1}`;
const self = new Map<string, number>(), total = new Map<string, number>();
let counted = 0;
for (const id of prof.samples) {
  const top = byId.get(id)!;
  if (["(idle)", "(program)", "(root)"].includes(top.callFrame.functionName)) continue;
  const stack: string[] = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(name(byId.get(cur)!));
  if (filter && !stack.some((s) => s.includes(filter))) continue;
  counted++;
  self.set(stack[0]!, (self.get(stack[0]!) ?? 0) + 1);
  for (const s of new Set(stack)) total.set(s, (total.get(s) ?? 0) + 1);
}
const n = Number(nArg ?? 40);
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title} (${counted} busy samples${filter ? ` under ${filter}` : ""})`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${((100 * v) / counted).toFixed(1).padStart(5)}%  ${String(v).padStart(6)}  ${k}`);
};
show("self", self);
show("total", total);
