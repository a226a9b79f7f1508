import { expect, test } from "bun:test";
import { isolated, stack } from "./chart-data.ts";

test("stacking adds each series onto the ones before it; null only where all so far are null", () => {
  expect(stack([[1, null, 0, null], [1, 2, null, null], [1, null, 5, 3]])).toEqual([
    [1, null, 0, null],
    [2, 2, 0, null],
    [3, 2, 5, 3],
  ]);
  expect(stack([])).toEqual([]);
});

test("isolated values are the ones a line cannot draw (no non-null neighbour)", () => {
  expect(isolated([null, null, 7, null])).toEqual([2]);
  expect(isolated([5, null, 1, 2, null, 0])).toEqual([0, 5]);
  expect(isolated([1, 2, 3])).toEqual([]);
  expect(isolated([4])).toEqual([0]);
  expect(isolated([null, undefined])).toEqual([]);
});
