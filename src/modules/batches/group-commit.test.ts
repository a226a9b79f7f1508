/** GroupCommit: items that arrive while a group is written go in the next group; a group that fails is written again item by item, so only a bad item fails. */
import { expect, test } from "bun:test";
import { GroupCommit } from "./group-commit.ts";

test("items arriving during a write are written together in the next group", async () => {
  const groups: number[][] = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  const g = new GroupCommit<number>(async (items) => {
    groups.push(items);
    if (groups.length === 1) await first;
  });
  const a = g.add(1);
  const rest = [2, 3, 4].map((i) => g.add(i));
  release();
  await Promise.all([a, ...rest]);
  expect(groups).toEqual([[1], [2, 3, 4]]);
});

test("a failing group is written again item by item: only the bad item is rejected, and the group's failure is told once", async () => {
  const written: number[] = [];
  const failures: Array<[string, number]> = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  let calls = 0;
  const g = new GroupCommit<number>(async (items) => {
    if (calls++ === 0) await first;
    if (items.includes(13)) throw new Error("bad item");
    written.push(...items);
  }, 200, (e, n) => failures.push([(e as Error).message, n]));
  const head = g.add(0);
  const results = [11, 12, 13, 14].map((i) => g.add(i).then(() => "ok", (e: Error) => e.message));
  release();
  await head;
  expect(await Promise.all(results)).toEqual(["ok", "ok", "bad item", "ok"]);
  expect(written).toEqual([0, 11, 12, 14]);
  expect(failures).toEqual([["bad item", 4]]);
});

test("groups are at most maxGroup items", async () => {
  const sizes: number[] = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  const g = new GroupCommit<number>(async (items) => {
    sizes.push(items.length);
    if (sizes.length === 1) await first;
  }, 3);
  const all = Array.from({ length: 8 }, (_, i) => g.add(i));
  release();
  await Promise.all(all);
  expect(sizes).toEqual([1, 3, 3, 1]);
});

test("a committed group's waiters are resumed through `resume`, each when it is called for that item", async () => {
  const resumes: Array<() => void> = [];
  const g = new GroupCommit<number>(async () => {}, 200, undefined, (resolve) => resumes.push(resolve));
  const resumed: number[] = [];
  const adds = [1, 2, 3].map((i) => g.add(i).then(() => resumed.push(i)));
  while (resumes.length < 3) await Bun.sleep(1);
  await Bun.sleep(5);
  expect(resumed).toEqual([]); // committed, but no waiter resumed yet
  resumes[1]!();
  await Bun.sleep(1);
  expect(resumed).toEqual([2]);
  resumes[0]!();
  resumes[2]!();
  await Promise.all(adds);
  expect(resumed).toEqual([2, 1, 3]);
});
