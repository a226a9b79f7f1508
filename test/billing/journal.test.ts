/**
 * The settlement journal on its own: segments are deleted once their settlements landed, a dead
 * process's journal is claimed once (torn last line skipped), a live process's or another
 * database's is left alone, and a journal that cannot be written never stops billing.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { claimOrphanJournals, Journal } from "../../src/billing/journal.ts";
import type { Settlement } from "../../src/billing/settle-batch.ts";
import { tempDir } from "./engine.case.ts";

const tmp = tempDir("reelay-journal-");
afterAll(() => tmp.remove());

const settlement = (ref: string): Settlement => ({ holdId: null, mode: "settle", actual: 5, cover: 0, reason: "t", usage: { accountId: "acct_x", ref, kind: "chat", model: "m", status: 200 } });
const errors: string[] = [];
const onError = (_e: unknown, what: string) => void errors.push(what);

test("segments rotate at each flush and go once their settlements landed; a clean close removes the directory", () => {
  const dir = join(tmp.dir, "live");
  const j = new Journal(dir, { owner: "i#1", pid: process.pid, processStart: performance.timeOrigin, database: "db1" }, onError);
  const a = j.append(settlement("req_a")), b = j.append(settlement("req_b"));
  j.rotate();
  const c = j.append(settlement("req_c"));
  expect([a, b, c]).toEqual([1, 1, 2]);
  expect(readdirSync(dir).sort()).toEqual(["000001.jsonl", "000002.jsonl", "meta.json"]);
  j.landed(a);
  expect(existsSync(join(dir, "000001.jsonl"))).toBe(true); // req_b is still out
  j.landed(b);
  expect(existsSync(join(dir, "000001.jsonl"))).toBe(false);
  expect(j.close()).toBe(false); // req_c never landed: kept for the next start
  expect(existsSync(join(dir, "000002.jsonl"))).toBe(true);
  const k = new Journal(join(tmp.dir, "clean"), { owner: "i#2", pid: process.pid, processStart: performance.timeOrigin, database: "db1" }, onError);
  k.landed(k.append(settlement("req_d")));
  expect(k.close()).toBe(true);
  expect(existsSync(join(tmp.dir, "clean"))).toBe(false);
});

test("a dead process's journal is claimed once, its torn last line skipped; live processes and other databases are left alone", () => {
  const root = join(tmp.dir, "root");
  const write = (name: string, pid: number, database: string, lines: string[], processStart = 1) => {
    mkdirSync(join(root, name), { recursive: true });
    writeFileSync(join(root, name, "meta.json"), JSON.stringify({ owner: `${name}#x`, pid, processStart, database }));
    writeFileSync(join(root, name, "000001.jsonl"), lines.join(""));
  };
  const dead = 2 ** 22 + 12_345; // above pid_max: no such process
  write("dead", dead, "db1", [JSON.stringify(settlement("req_1")) + "\n", JSON.stringify(settlement("req_2")) + "\n", '{"mode":"sett']);
  write("alive", process.ppid, "db1", [JSON.stringify(settlement("req_3")) + "\n"]);
  write("elsewhere", dead, "db2", [JSON.stringify(settlement("req_4")) + "\n"]);
  write("elsewhere-empty", dead, "db2", []); // nothing to replay anywhere: cleaned up
  write("sibling", process.pid, "db1", [JSON.stringify(settlement("req_5")) + "\n"], performance.timeOrigin);
  const alive = (pid: number) => pid === process.ppid || pid === process.pid;
  const claimed = claimOrphanJournals(root, "db1", alive);
  expect(claimed.map((o) => [o.meta.owner, o.settlements.map((s) => s.usage.ref)])).toEqual([["dead#x", ["req_1", "req_2"]]]);
  expect(claimOrphanJournals(root, "db1", alive)).toEqual([]); // claimed by us already
  claimed[0]!.done();
  expect(readdirSync(root).sort()).toEqual(["alive", "elsewhere", "sibling"]);
});

test("a journal that cannot be written reports it and keeps going", () => {
  const dir = join(tmp.dir, "broken");
  const j = new Journal(dir, { owner: "i#3", pid: process.pid, processStart: performance.timeOrigin, database: "db1" }, onError);
  j.append(settlement("req_x"));
  // the directory disappears under it: no new segment can be opened (like a full disk or no file descriptors left)
  rmSync(dir, { recursive: true, force: true });
  errors.length = 0;
  expect(() => j.rotate()).not.toThrow();
  expect(errors).toEqual(["rotate"]);
  expect(j.append(settlement("req_y"))).toBe(1); // still the open (unlinked) segment
  expect(() => j.landed(1)).not.toThrow();
  expect(() => j.close()).not.toThrow();
});

test("another database's empty journal removed by an instance booting beside us meanwhile: not an error (CI: a boot failed with ENOENT)", () => {
  const root = join(tmp.dir, "racing");
  const dead = 2 ** 22 + 12_346;
  const theirs = dead + 1;
  for (const name of ["theirs-empty", "dead-here"]) {
    mkdirSync(join(root, name), { recursive: true });
    writeFileSync(join(root, name, "meta.json"), JSON.stringify({ owner: `${name}#x`, pid: name === "theirs-empty" ? theirs : dead, processStart: 1, database: name === "theirs-empty" ? "db2" : "db1" }));
    writeFileSync(join(root, name, "000001.jsonl"), name === "dead-here" ? JSON.stringify(settlement("req_9")) + "\n" : "");
  }
  // the other instance removes the directory between our reading its meta.json and listing it
  const alive = (pid: number) => {
    if (pid === theirs) rmSync(join(root, "theirs-empty"), { recursive: true, force: true });
    return pid === process.pid;
  };
  const claimed = claimOrphanJournals(root, "db1", alive);
  expect(claimed.map((o) => o.settlements.map((s) => s.usage.ref))).toEqual([["req_9"]]);
  claimed[0]!.done();
  expect(readdirSync(root)).toEqual([]);
});
