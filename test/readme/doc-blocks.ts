/**
 * The code blocks of the README and of the docs pages, with the marker that says how each is
 * checked. A marker is an HTML comment on the line right before the opening fence:
 *
 * - `<!-- readme-test: starts the server -->`: the README's two commands; the walkthrough test
 *   starts the server with its `npm start` line.
 * - `<!-- readme-test: server running -->` / `<!-- readme-test: server stopped -->`: run by the
 *   walkthrough test (bash, one session), against the running server or on its stopped data.
 * - `<!-- readme-test: file NAME -->`: written to NAME in the walkthrough's directory at its place
 *   in the session, for a later block to run.
 * - `<!-- readme-test: checked by test/….test.ts -->`: that test reads the block (with
 *   `blocksCheckedBy`) and checks it.
 *
 * Marked blocks run wherever they live (README first, then docs/*.md in name order). In the README
 * and the pages moved out of it (WALKED_PAGES) every block must carry a marker.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dir, "../..");

/** Every block of these files must say how it is checked. */
export const WALKED_PAGES = [
  "README.md",
  "docs/api.md",
  "docs/architecture.md",
  "docs/benchmarks.md",
  "docs/billing.md",
  "docs/configuration.md",
  "docs/console.md",
  "docs/operations.md",
  "docs/plugins.md",
  "docs/providers.md",
  "docs/video.md",
  "docs/webhooks.md",
];

export type Marker =
  | { kind: "starts the server" | "server running" | "server stopped" }
  | { kind: "file"; name: string }
  | { kind: "checked by"; test: string };

export interface DocBlock {
  file: string; // relative to the repository root
  line: number; // of the opening fence, 1-based
  lang: string;
  code: string;
  marker: Marker | null;
}

/** README.md, then docs/*.md by name. */
export function docFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`);
  return ["README.md", ...docs];
}

function parseMarker(line: string): Marker | null | "malformed" {
  const m = /^<!-- readme-test: (.*) -->$/.exec(line.trim());
  if (!m) return line.includes("readme-test:") ? "malformed" : null;
  const what = m[1]!.trim();
  if (what === "starts the server" || what === "server running" || what === "server stopped") return { kind: what };
  const file = /^file ([\w.-]+)$/.exec(what);
  if (file) return { kind: "file", name: file[1]! };
  const checked = /^checked by (test\/\S+\.test\.ts)$/.exec(what);
  if (checked) return { kind: "checked by", test: checked[1]! };
  return "malformed";
}

/** The fenced blocks of one file, each with the marker on the line before it (or null). */
export function blocksOf(file: string): DocBlock[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l === "```");
    if (end < 0) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    const marker = i > 0 ? parseMarker(lines[i - 1]!) : null;
    if (marker === "malformed") throw new Error(`${file}:${i}: a readme-test marker this test does not know: ${lines[i - 1]}`);
    blocks.push({ file, line: i + 1, lang: open[1]!, code: lines.slice(i + 1, end).join("\n"), marker });
    i = end;
  }
  const markers = lines.filter((l) => l.startsWith("<!-- readme-test:")).length;
  const attached = blocks.filter((b) => b.marker).length;
  if (markers !== attached) throw new Error(`${file} has ${markers} readme-test markers but ${attached} stand right before a code block`);
  return blocks;
}

export function allBlocks(): DocBlock[] {
  return docFiles().flatMap(blocksOf);
}

/** The blocks a test has taken on checking (`<!-- readme-test: checked by <test> -->`), in doc order. */
export function blocksCheckedBy(test: string): DocBlock[] {
  return allBlocks().filter((b) => b.marker?.kind === "checked by" && b.marker.test === test);
}

export const where = (b: DocBlock) => `${b.file}:${b.line}`;
