import { expect, test } from "bun:test";
import { sizeFor } from "./video-size.ts";

test("a photo's orientation picks the video size", () => {
  expect(sizeFor(4032, 3024)).toBe("832x480"); // a phone photo held sideways
  expect(sizeFor(3024, 4032)).toBe("480x832");
  expect(sizeFor(1000, 1000)).toBe("624x624");
  expect(sizeFor(1100, 1000)).toBe("624x624"); // nearly square
});
