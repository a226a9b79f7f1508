/** GroupCommit: items that arrive while a group is written go in the next group (up to `parallel` groups written at once); a group that fails is written again item by item, so only a bad item fails. */
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

test("a failing group is written again item by item: only the bad item is rejected", async () => {
  const written: number[] = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  let calls = 0;
  const g = new GroupCommit<number>(async (items) => {
    if (calls++ === 0) await first;
    if (items.includes(13)) throw new Error("bad item");
    written.push(...items);
  });
  const head = g.add(0);
  const results = [11, 12, 13, 14].map((i) => g.add(i).then(() => "ok", (e: Error) => e.message));
  release();
  await head;
  expect(await Promise.all(results)).toEqual(["ok", "ok", "bad item", "ok"]);
  expect(written).toEqual([0, 11, 12, 14]);
});

test("groups are at most maxGroup items", async () => {
  const sizes: number[] = [];
  let release!: () => void;
  const first = new Promise<void>((r) => (release = r));
  const g = new GroupCommit<number>(async (items) => {
    sizes.push(items.length);
    if (sizes.length === 1) await first;
  }, { maxGroup: 3 });
  const all = Array.from({ length: 8 }, (_, i) => g.add(i));
  release();
  await Promise.all(all);
  expect(sizes).toEqual([1, 3, 3, 1]);
});

/** a write that waits until the test lets group n (0-based) finish */
function gatedWrites() {
  const groups: number[][] = [];
  const gates: Array<() => void> = [];
  const started: Array<() => void> = [];
  const write = async (items: number[]) => {
    groups.push(items);
    started.shift()?.();
    await new Promise<void>((r) => gates.push(r));
  };
  const nextStart = () => new Promise<void>((r) => started.push(r));
  return { groups, gates, write, nextStart };
}

test("parallel = 2: a second group is written while the first is, from what queued meanwhile; a third waits for one of them", async () => {
  const w = gatedWrites();
  const g = new GroupCommit<number>(w.write, { parallel: 2 });
  const done: number[] = [];
  const add = (i: number) => g.add(i).then(() => void done.push(i));
  const a = add(1);
  const b = add(2);
  // both writers started at once, each with what was queued when it began
  expect(w.groups).toEqual([[1], [2]]);
  const rest = [3, 4, 5].map(add);
  await Bun.sleep(5);
  expect(w.groups).toEqual([[1], [2]]);
  // the second group commits first: its item resolves, the first's does not yet
  const third = w.nextStart();
  w.gates[1]!();
  await b;
  expect(done).toEqual([2]);
  await third;
  expect(w.groups).toEqual([[1], [2], [3, 4, 5]]);
  w.gates[2]!();
  await Promise.all(rest);
  expect(done).toEqual([2, 3, 4, 5]);
  w.gates[0]!();
  await a;
  expect(done).toEqual([2, 3, 4, 5, 1]);
});

test("parallel = 2: a failing group is written again item by item while the other group goes on", async () => {
  const written: number[] = [];
  const gates: Array<() => void> = [];
  const g = new GroupCommit<number>(async (items) => {
    if (items.length > 1 || items[0] === 1) await new Promise<void>((r) => gates.push(r));
    if (items.includes(13)) throw new Error("bad item");
    written.push(...items);
  }, { parallel: 2 });
  const one = g.add(1);
  const two = g.add(2);
  const results = [11, 12, 13, 14].map((i) => g.add(i).then(() => "ok", (e: Error) => e.message));
  await two;
  await Bun.sleep(5);
  expect(gates.length).toBe(2); // group [1] and group [11..14] both in flight
  gates[1]!();
  expect(await Promise.all(results)).toEqual(["ok", "ok", "bad item", "ok"]);
  expect(written).toEqual([2, 11, 12, 14]);
  gates[0]!();
  await one;
  expect(written).toEqual([2, 11, 12, 14, 1]);
});
