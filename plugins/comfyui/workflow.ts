/**
 * The operator's workflow: an API-format export (ComfyUI: Workflow → Export (API)), i.e. an object
 * of nodes `{"<id>": {"class_type": "...", "inputs": {...}}}`, in which string values carry
 * placeholders. A value that is exactly one placeholder becomes the value itself — a number for
 * the numeric ones (`"{{seed}}"` → 1234) — and placeholders inside a longer string are replaced in
 * place (`"video/reelay_{{seed}}"` → "video/reelay_1234"). Values inserted are never scanned again,
 * so a prompt containing "{{seed}}" stays as the client wrote it.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

export const PLACEHOLDERS = ["prompt", "negative_prompt", "image", "seed", "steps", "width", "height", "frames", "fps", "seconds"] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
const NUMERIC: ReadonlySet<string> = new Set(["seed", "steps", "width", "height", "frames", "fps", "seconds"]);
const TOKEN = /\{\{([A-Za-z_]+)\}\}/g;
const EXACT = /^\{\{([A-Za-z_]+)\}\}$/;

export interface WorkflowNode {
  class_type: string;
  inputs: Record<string, unknown>;
  _meta?: { title?: string };
}
export type Workflow = Record<string, WorkflowNode>;

/** The workflow at `path`, checked; problems name the node and input. */
export function readWorkflow(path: string, outputNode?: string): { workflow?: Workflow; problems: string[] } {
  const file = resolve(path);
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return { problems: [err.code === "ENOENT" ? `no file at ${file}` : err instanceof SyntaxError ? `${file} is not JSON: ${err.message}` : `cannot read ${file}: ${err.message}`] };
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return { problems: [`${file} must hold a JSON object of nodes`] };
  const obj = doc as Record<string, unknown>;
  if (Array.isArray(obj.nodes) && "links" in obj) {
    return { problems: [`${file} is a UI-format workflow; export it in API format instead (ComfyUI: Workflow → Export (API))`] };
  }
  const problems: string[] = [];
  const found = new Set<string>();
  for (const [id, node] of Object.entries(obj)) {
    const n = node as Partial<WorkflowNode> | null;
    if (typeof n !== "object" || n === null || typeof n.class_type !== "string" || typeof n.inputs !== "object" || n.inputs === null) {
      problems.push(`node "${id}" is not an API-format node ({"class_type", "inputs"})`);
      continue;
    }
    walkStrings(n.inputs, `node "${id}" (${n.class_type}) input "`, (text, where) => {
      for (const m of text.matchAll(TOKEN)) {
        if ((PLACEHOLDERS as readonly string[]).includes(m[1]!)) found.add(m[1]!);
        else problems.push(`${where}" has an unknown placeholder {{${m[1]}}} (known: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(", ")})`);
      }
    });
  }
  if (problems.length === 0 && Object.keys(obj).length === 0) problems.push(`${file} has no nodes`);
  for (const needed of ["prompt", "image"] as const) {
    if (problems.length === 0 && !found.has(needed)) problems.push(`${file} has no {{${needed}}} placeholder: put it where the workflow takes the ${needed === "image" ? "source image (LoadImage's image)" : "positive prompt"}`);
  }
  if (outputNode !== undefined && !(outputNode in obj)) problems.push(`outputNode "${outputNode}" is not a node of ${file}`);
  return problems.length ? { problems } : { workflow: obj as Workflow, problems };
}

/** A copy of the workflow with every placeholder filled in. */
export function fillWorkflow(template: Workflow, values: Record<Placeholder, string | number>): Workflow {
  const fill = (v: unknown): unknown => {
    if (typeof v === "string") {
      const exact = EXACT.exec(v);
      if (exact && exact[1]! in values) {
        const value = values[exact[1] as Placeholder];
        return NUMERIC.has(exact[1]!) ? Number(value) : String(value);
      }
      return v.replace(TOKEN, (whole, name: string) => (name in values ? String(values[name as Placeholder]) : whole));
    }
    if (Array.isArray(v)) return v.map(fill);
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
    return v;
  };
  return fill(template) as Workflow;
}

/** How many sampler nodes the workflow runs: ComfyUI's progress restarts at each one. */
export function samplerCount(workflow: Workflow): number {
  return Math.max(1, Object.values(workflow).filter((n) => /sampler/i.test(n.class_type) && !/select|scheduler/i.test(n.class_type)).length);
}

function walkStrings(v: unknown, where: string, visit: (text: string, where: string) => void, key = ""): void {
  if (typeof v === "string") return visit(v, where + key);
  if (Array.isArray(v)) return v.forEach((x, i) => walkStrings(x, where, visit, `${key}[${i}]`));
  if (typeof v === "object" && v !== null) for (const [k, x] of Object.entries(v)) walkStrings(x, where, visit, key ? `${key}.${k}` : k);
}
