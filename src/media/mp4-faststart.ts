/**
 * Moves an MP4's `moov` box in front of its `mdat`, so a browser can start playing before the whole
 * file has arrived. h264-mp4-encoder (minimp4) writes `ftyp free mdat moov free`; moving `moov`
 * shifts the sample data, so every chunk offset in `stco` / `co64` is rewritten by the distance its
 * `mdat` moved. The creation and modification times minimp4 stamps into `mvhd`, `tkhd` and `mdhd`
 * (the wall clock, in seconds) are zeroed, so the same frames always give the same bytes (two
 * renders of one request straddling a second boundary differed in 8 bytes).
 */

export interface TopLevelBox {
  type: string;
  start: number;
  size: number;
}

export function listTopLevelBoxes(file: Uint8Array): TopLevelBox[] {
  const v = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const boxes: TopLevelBox[] = [];
  let at = 0;
  while (at + 8 <= file.length) {
    let size = v.getUint32(at);
    const type = String.fromCharCode(file[at + 4]!, file[at + 5]!, file[at + 6]!, file[at + 7]!);
    if (size === 1) {
      if (at + 16 > file.length) throw new Error("mp4: truncated 64-bit box size");
      size = Number(v.getBigUint64(at + 8));
    } else if (size === 0) {
      size = file.length - at; // box runs to the end of the file
    }
    if (size < 8 || at + size > file.length) throw new Error(`mp4: box '${type}' at ${at} has bad size ${size}`);
    boxes.push({ type, start: at, size });
    at += size;
  }
  if (at !== file.length) throw new Error("mp4: trailing bytes after the last box");
  return boxes;
}

export function isFaststart(file: Uint8Array): boolean {
  const boxes = listTopLevelBoxes(file);
  const moov = boxes.findIndex((b) => b.type === "moov");
  const mdat = boxes.findIndex((b) => b.type === "mdat");
  return moov !== -1 && (mdat === -1 || moov < mdat);
}

export function moveMoovToFront(file: Uint8Array): Uint8Array {
  const boxes = listTopLevelBoxes(file);
  const moovIndex = boxes.findIndex((b) => b.type === "moov");
  if (moovIndex === -1) throw new Error("mp4: no moov box");
  const firstMdat = boxes.findIndex((b) => b.type === "mdat");
  if (firstMdat === -1 || moovIndex < firstMdat) return file;

  const moov = boxes[moovIndex]!;
  // new order: what came before the first mdat, then moov, then the rest minus moov and padding
  const order = [
    ...boxes.slice(0, firstMdat),
    moov,
    ...boxes.slice(firstMdat).filter((b) => b !== moov && b.type !== "free" && b.type !== "skip"),
  ];
  const newStart = new Map<TopLevelBox, number>();
  let total = 0;
  for (const b of order) { newStart.set(b, total); total += b.size; }

  const out = new Uint8Array(total);
  for (const b of order) out.set(file.subarray(b.start, b.start + b.size), newStart.get(b)!);

  const mdats = boxes.filter((b) => b.type === "mdat");
  const relocate = (offset: number): number => {
    const owner = mdats.find((m) => offset >= m.start && offset < m.start + m.size);
    if (!owner) throw new Error(`mp4: chunk offset ${offset} points outside every mdat`);
    return offset - owner.start + newStart.get(owner)!;
  };
  const at = newStart.get(moov)!;
  patchChunkOffsets(out.subarray(at, at + moov.size), relocate);
  return out;
}

const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "stbl", "edts", "udta", "mvex", "moof", "traf"]);

const TIMED = new Set(["mvhd", "tkhd", "mdhd"]);

/** Walks a box tree (starting at one box), rewrites every stco / co64 entry and zeroes the timestamps, in place. */
function patchChunkOffsets(box: Uint8Array, relocate: (offset: number) => number): void {
  const v = new DataView(box.buffer, box.byteOffset, box.byteLength);
  const walk = (from: number, to: number): void => {
    let at = from;
    while (at + 8 <= to) {
      const size = v.getUint32(at);
      const type = String.fromCharCode(box[at + 4]!, box[at + 5]!, box[at + 6]!, box[at + 7]!);
      if (size < 8 || at + size > to) throw new Error(`mp4: box '${type}' inside moov has bad size ${size}`);
      if (CONTAINERS.has(type)) walk(at + 8, at + size);
      else if (TIMED.has(type)) {
        // full box: version (1 byte) + flags (3), then creation and modification time, 32 or 64 bits
        if (box[at + 8] === 1) (v.setBigUint64(at + 12, 0n), v.setBigUint64(at + 20, 0n));
        else (v.setUint32(at + 12, 0), v.setUint32(at + 16, 0));
      } else if (type === "stco") {
        const count = v.getUint32(at + 12);
        for (let i = 0; i < count; i++) {
          const p = at + 16 + i * 4;
          const moved = relocate(v.getUint32(p));
          if (moved > 0xffffffff) throw new Error("mp4: chunk offset past 4 GiB needs co64");
          v.setUint32(p, moved);
        }
      } else if (type === "co64") {
        const count = v.getUint32(at + 12);
        for (let i = 0; i < count; i++) {
          const p = at + 16 + i * 8;
          v.setBigUint64(p, BigInt(relocate(Number(v.getBigUint64(p)))));
        }
      }
      at += size;
    }
  };
  walk(8, box.length);
}
