import { describe, expect, test } from "bun:test";
import { isFaststart, listTopLevelBoxes, moveMoovToFront } from "./mp4-faststart.ts";

function box(type: string, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + payload.length);
  new DataView(out.buffer).setUint32(0, out.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(payload, 8);
  return out;
}
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
};
function fullBox(type: string, entries: number[], wide: boolean): Uint8Array {
  const body = new Uint8Array(8 + entries.length * (wide ? 8 : 4));
  const v = new DataView(body.buffer);
  v.setUint32(4, entries.length);
  entries.forEach((e, i) => (wide ? v.setBigUint64(8 + i * 8, BigInt(e)) : v.setUint32(8 + i * 4, e)));
  return box(type, body);
}
function readOffsets(file: Uint8Array, type: "stco" | "co64"): number[] {
  const at = Buffer.from(file).indexOf(type) - 4;
  const v = new DataView(file.buffer, file.byteOffset);
  const n = v.getUint32(at + 12);
  return Array.from({ length: n }, (_, i) => (type === "co64" ? Number(v.getBigUint64(at + 16 + i * 8)) : v.getUint32(at + 16 + i * 4)));
}

/** ftyp, free, mdat (three "chunks" of recognisable bytes), moov with stco or co64 pointing at them */
function sampleFile(wide: boolean) {
  const ftyp = box("ftyp", new TextEncoder().encode("isom\0\0\0\0isom"));
  const free = box("free", new Uint8Array(12));
  const chunks = [new Uint8Array(5).fill(0xa1), new Uint8Array(7).fill(0xb2), new Uint8Array(3).fill(0xc3)];
  const mdat = box("mdat", concat(...chunks));
  const mdatStart = ftyp.length + free.length;
  const offsets = [mdatStart + 8, mdatStart + 8 + 5, mdatStart + 8 + 12];
  const stbl = box("stbl", fullBox(wide ? "co64" : "stco", offsets, wide));
  const moov = box("moov", box("trak", box("mdia", box("minf", stbl))));
  return { file: concat(ftyp, free, mdat, moov, box("free", new Uint8Array(4))), chunks };
}

describe("moveMoovToFront", () => {
  for (const wide of [false, true]) {
    test(`moves moov before mdat and keeps ${wide ? "co64" : "stco"} offsets pointing at the same bytes`, () => {
      const { file, chunks } = sampleFile(wide);
      expect(isFaststart(file)).toBe(false);
      const out = moveMoovToFront(file);
      expect(isFaststart(out)).toBe(true);
      expect(listTopLevelBoxes(out).map((b) => b.type)).toEqual(["ftyp", "free", "moov", "mdat"]);
      const offsets = readOffsets(out, wide ? "co64" : "stco");
      expect(offsets).not.toEqual(readOffsets(file, wide ? "co64" : "stco"));
      offsets.forEach((off, i) => expect([...out.subarray(off, off + chunks[i]!.length)]).toEqual([...chunks[i]!]));
    });
  }

  test("leaves a file that is already faststart untouched", () => {
    const out = moveMoovToFront(moveMoovToFront(sampleFile(false).file));
    expect(moveMoovToFront(out)).toBe(out);
  });

  test("rejects broken files", () => {
    const { file } = sampleFile(false);
    expect(() => moveMoovToFront(file.subarray(0, file.length - 3))).toThrow();
    expect(() => moveMoovToFront(box("mdat", new Uint8Array(4)))).toThrow(/no moov/);
  });
});
