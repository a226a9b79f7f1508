/**
 * The contract suite fails a plugin that gets the host's rules wrong: each variant of
 * broken-plugins.ts is run through it (`bun test` on broken.contract-case.ts, as a provider runs
 * it) and must fail exactly where it is wrong; the correct variant passes everything.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { VARIANTS, type Variant } from "./broken-plugins.ts";

/** the contract tests each variant must fail (substrings of their names); every other test passes */
const MUST_FAIL: Record<Exclude<Variant, "good">, string[]> = {
  "unbranded-errors": ["chat > chat > failures: the kind each gives, as the client sees it > upstream HTTP 401 → client 502", "embeddings > embeddings > failures: the kind each gives, as the client sees it > upstream unreachable", "video > video > failures: retried or not, as the scheduler decides > submit answered HTTP 500 → retried"],
  "wrong-status-kind": ["chat > chat > failures: the kind each gives, as the client sees it > upstream HTTP 401 → client 502", "video > video > failures: retried or not, as the scheduler decides > submit answered HTTP 401 → the job fails"],
  "wrong-retry": ["upstream HTTP 500 → client 502, retried", "upstream HTTP 429 → client 429, retried", "submit answered HTTP 503 → retried"],
  "usage-chunk-not-last": ["the usage chunk rules"],
  "events-without-json": ["the usage chunk rules"],
  "ignores-abort": ["aborting the call's signal mid-stream ends it promptly"],
  "usage-only-in-completion": ["complete(): a result the host accepts, billed from what it returns"],
  "string-usage": ["complete(): a result the host accepts, billed from what it returns"],
  "progress-percent": ["polls through queued/running (progress 0–1) to an MP4"],
  "numeric-handle": ["submit gives a string handle"],
  "not-an-mp4": ["polls through queued/running (progress 0–1) to an MP4"],
  "permanent-failure-retried": ["a job the provider fails for good → state failed with a code, not retried"],
};

async function runContract(variant: Variant): Promise<{ passed: number; failed: string[] }> {
  const proc = Bun.spawn([process.execPath, "test", "./test/plugin-contract/broken.contract-case.ts"], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...process.env, BROKEN: variant },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
  await proc.exited;
  const failed = [...new Set(out.split("\n").filter((l) => l.startsWith("(fail) ")).map((l) => l.slice(7).replace(/ \[[\d.]+m?s\]$/, "")))];
  return { passed: Number(/^\s*(\d+) pass$/m.exec(out)?.[1] ?? 0), failed };
}

test("a correct plugin passes the whole contract", async () => {
  const r = await runContract("good");
  expect(r.failed).toEqual([]);
  expect(r.passed).toBeGreaterThan(40);
}, 60_000);

for (const variant of VARIANTS.filter((v): v is Exclude<Variant, "good"> => v !== "good")) {
  test(`the contract fails a plugin that gets it wrong: ${variant}`, async () => {
    const r = await runContract(variant);
    for (const name of MUST_FAIL[variant]) expect({ variant, failedAs: r.failed.some((f) => f.includes(name)) ? name : `nothing matching ${name}; failed: ${r.failed.join(" | ")}` }).toEqual({ variant, failedAs: name });
    expect(r.passed).toBeGreaterThan(20); // the rest of the contract still ran and passed
  }, 60_000);
}
