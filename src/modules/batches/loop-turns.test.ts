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
  // 40 steps of 3 ms each, queued at once (as a group commit resumes its lines): 120 ms of work
  const all = Array.from({ length: 40 }, () => turns.next().then(() => { busy(3); done++; }));
  const answeredAfter = fetch(`http://127.0.0.1:${server.port}/`).then(async (r) => { expect(await r.text()).toBe("ok"); return done; });
  const at = await answeredAfter;
  await Promise.all(all);
  expect(done).toBe(40);
  // resumed all in one task, the answer would come after the 40th step
  expect(at).toBeLessThan(20);
});
