import { describe, expect, test } from "bun:test";
import { StopText } from "./stop-text.ts";

const feed = (stops: string[], pieces: string[]) => {
  const s = new StopText(stops);
  const sent: string[] = [];
  for (const p of pieces) {
    const r = s.push(p);
    sent.push(r.emit);
    if (r.stopped) return { sent, stopped: true };
  }
  sent.push(s.flush());
  return { sent, stopped: false };
};

describe("stop sequences on streamed text", () => {
  test("no stop sequences: every piece goes out as it comes", () => {
    expect(feed([], ["Once", " upon", " a"])).toEqual({ sent: ["Once", " upon", " a", ""], stopped: false });
  });

  test("a stop sequence split over pieces is never sent, not even its start", () => {
    const r = feed(["The end"], ["and they", " played. Th", "e e", "nd of it"]);
    expect(r.stopped).toBe(true);
    expect(r.sent.join("")).toBe("and they played. ");
    expect(r.sent).toEqual(["and they", " played. ", "", ""]);
  });

  test("held-back text that turns out not to be a stop sequence is sent with what follows", () => {
    const r = feed(["The end"], ["Th", "e dog"]);
    expect(r).toEqual({ sent: ["", "The dog", ""], stopped: false });
  });

  test("the earliest of several stop sequences wins; text after it is dropped", () => {
    expect(feed(["dog", "cat"], ["a cat and a dog"])).toEqual({ sent: ["a "], stopped: true });
  });

  test("what is held back at the end of the answer is flushed", () => {
    expect(feed(["Lily!"], ["said Lil"])).toEqual({ sent: ["said ", "Lil"], stopped: false });
  });
});
