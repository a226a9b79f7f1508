import { describe, expect, test } from "bun:test";
import { JobTable } from "./job-table.ts";

describe("JobTable", () => {
  const mp4 = new Uint8Array([1, 2, 3]);

  test("a result is handed over once, then the handle is lost", () => {
    const table = new JobTable({ resultTtlMs: 1000, maxFinished: 4 });
    table.set("a", { state: "running", progress: 0.5 });
    expect(table.take("a")).toEqual({ state: "running", progress: 0.5 });
    table.set("a", { state: "succeeded", mp4, finishedAt: Date.now() });
    expect(table.take("a")).toEqual({ state: "succeeded", mp4 });
    expect(table.take("a")).toEqual({ state: "lost" });
    expect(table.size).toBe(0);
  });

  test("finished results expire after the TTL; running jobs do not", () => {
    let now = 1_000;
    const table = new JobTable({ resultTtlMs: 500, maxFinished: 4 }, () => now);
    table.set("done", { state: "succeeded", mp4, finishedAt: now });
    table.set("failed", { state: "failed", code: "invalid_image", message: "x", finishedAt: now });
    table.set("busy", { state: "running", progress: 0.1 });
    now += 499;
    expect(table.size).toBe(3);
    now += 1;
    expect(table.take("done")).toEqual({ state: "lost" });
    expect(table.take("failed")).toEqual({ state: "lost" });
    expect(table.take("busy")).toEqual({ state: "running", progress: 0.1 });
  });

  test("at most maxFinished unpolled results are kept, oldest dropped first", () => {
    const table = new JobTable({ resultTtlMs: 60_000, maxFinished: 2 });
    for (const h of ["a", "b", "c"]) table.set(h, { state: "succeeded", mp4, finishedAt: Date.now() });
    table.set("q", { state: "queued" });
    expect(table.take("a")).toEqual({ state: "lost" });
    expect(table.take("b").state).toBe("succeeded");
    expect(table.take("c").state).toBe("succeeded");
    expect(table.take("q")).toEqual({ state: "queued" });
  });
});
