/** UpstreamPlaces: at most `size` lines hold a place; a place is taken once and given back once; a stopped line stops waiting without a place. */
import { expect, test } from "bun:test";
import { UpstreamPlaces } from "./upstream-places.ts";

test("at most `size` places are held; a place given back lets a waiting line in", async () => {
  const places = new UpstreamPlaces(2);
  const signal = new AbortController().signal;
  const [a, b, c] = [places.gate(signal), places.gate(signal), places.gate(signal)];
  await a.enter();
  await b.enter();
  await a.enter(); // entering twice takes one place
  let cIn = false;
  const cEntered = c.enter().then(() => (cIn = true));
  await Bun.sleep(5);
  expect([places.inUse, cIn]).toEqual([2, false]);
  a.leave();
  a.leave(); // giving back twice gives back one place
  await cEntered;
  expect(places.inUse).toBe(2);
  b.leave();
  c.leave();
  expect(places.inUse).toBe(0);
});

test("a line stopped while it waits stops waiting, holds no place, and gives nothing back", async () => {
  const places = new UpstreamPlaces(1);
  const held = places.gate(new AbortController().signal);
  await held.enter();
  const stop = new AbortController();
  const waiting = places.gate(stop.signal);
  const entered = waiting.enter();
  stop.abort();
  await entered;
  waiting.leave();
  expect(places.inUse).toBe(1);
  held.leave();
  expect(places.inUse).toBe(0);
});
