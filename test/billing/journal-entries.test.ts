/**
 * Journal lines are the settlements' batch entries (settle-batch.ts's settlementEntry, the text the
 * batch statement reads): read back after a crash they are the same settlements, and lines written
 * by earlier versions (a Settlement's JSON) still read.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { claimOrphanJournals, Journal } from "../../src/billing/journal.ts";
import { settlementEntry, type Settlement } from "../../src/billing/settle-batch.ts";
import { tempDir } from "./engine.case.ts";

const tmp = tempDir("reelay-journal-entries-");
afterAll(() => tmp.remove());

const settlement = (ref: string): Settlement => ({ holdId: null, mode: "settle", actual: 5, cover: 0, reason: "t", usage: { accountId: "acct_x", ref, kind: "chat", model: "m", status: 200 } });

test("lines are batch entries; read back they are the same settlements (older Settlement lines still read)", () => {
  const root = join(tmp.dir, "entries");
  const dead = 2 ** 22 + 54_321; // above pid_max: no such process
  const full: Settlement = {
    holdId: "hold_1", mode: "settle", actual: 1_234_567, cover: 2_000_000, reason: "chat m",
    usage: { accountId: "acct_y", keyId: "key_1", ref: "req_e", kind: "chat", model: "m", plugin: "p", promptTokens: 12, completionTokens: 6, cachedTokens: 3, status: 200, latencyMs: 7, route: "/v1/chat/completions", tokenSource: "upstream", pricing: '{"in":1}' },
  };
  const j = new Journal(join(root, "gone"), { owner: "gone#1", pid: dead, processStart: 1, database: "db1" }, () => {});
  j.append(settlementEntry(full)!);
  j.append(settlement("req_old"));
  j.append(settlementEntry(settlement("req_new"))!);
  const [o] = claimOrphanJournals(root, "db1", () => false);
  expect(o!.settlements.map((s) => s.usage.ref)).toEqual(["req_e", "req_old", "req_new"]);
  // the entry of what was read back is the entry written: a replay sends the batch the same row
  expect(settlementEntry(o!.settlements[0]!)).toBe(settlementEntry(full));
  expect(o!.settlements[0]!.cover).toBe(1_234_567); // clamped to actual, as the batch does
  expect(settlementEntry({ ...full, actual: 1.5 })).toBeNull(); // not an amount: left to fail in its batch
  o!.done();
});
