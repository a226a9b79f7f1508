/** LoopTurns: queued work runs in order, one step per turn of the event loop, with the loop's I/O served between steps. */
import { afterEach, expect, test } from "bun:test";
import { LoopTurns } from "./loop-turns.ts";

const busy = (ms: number) => {
  const t = performance.now();
  while (performance.now() - t < ms);
};

let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
});

test("steps run in the order they were queued; next() resolves in turn", async () => {
  const turns = new LoopTurns();
  const order: string[] = [];
  turns.add(() => order.push("a"));
  const b = turns.next().then(() => order.push("b"));
  turns.add(() => order.push("c"));
  await b;
  await turns.next();
  expect(order).toEqual(["a", "b", "c"]);
});

test("a request to this process is answered between the steps, not after all of them", async () => {
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
  const turns = new LoopTurns();
  let done = 0;
  // 100 steps of 2 ms each, queued at once (as a group commit resumes its lines): 200 ms of work
  const all = Array.from({ length: 100 }, () => turns.next().then(() => { busy(2); done++; }));
  const answeredAfter = fetch(`http://127.0.0.1:${server.port}/`).then(async (r) => { expect(await r.text()).toBe("ok"); return done; });
  const at = await answeredAfter;
  await Promise.all(all);
  expect(done).toBe(100);
  // resumed all in one task, the answer would come after the last step
  expect(at).toBeLessThan(100);
});

test("a queue that never runs empty keeps every step, in order, across its compaction", async () => {
  const turns = new LoopTurns();
  const ran: number[] = [];
  // each step queues the next before the queue is empty: 3,000 steps through one unbroken chain
  let queued = 0;
  const more = () => { if (queued < 3_000) { const i = queued++; turns.add(() => { ran.push(i); more(); }); } };
  more();
  more();
  while (ran.length < 3_000) await turns.next();
  expect(ran).toEqual(Array.from({ length: 3_000 }, (_, i) => i));
});
