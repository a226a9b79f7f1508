/**
 * Adds a string key to a GGUF file's metadata (GGUF v3: header, key/values, tensor infos, aligned
 * tensor data). Only tests use it: they give stories260K a chat template, so the chat-template path
 * runs on real weights.
 */

const GGUF_MAGIC = 0x46554747; // "GGUF" little-endian
const DEFAULT_ALIGNMENT = 32;
/** byte sizes of the fixed-size GGUF value types, by type id */
const SCALAR_SIZE: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

export function withStringMetadata(gguf: Uint8Array, key: string, value: string): Uint8Array {
  const view = new DataView(gguf.buffer, gguf.byteOffset, gguf.byteLength);
  if (view.getUint32(0, true) !== GGUF_MAGIC || view.getUint32(4, true) !== 3) throw new Error("not a GGUF v3 file");
  const tensorCount = Number(view.getBigUint64(8, true));
  const kvCount = Number(view.getBigUint64(16, true));
  let pos = 24;
  const str = () => {
    const len = Number(view.getBigUint64(pos, true));
    const s = new TextDecoder().decode(gguf.subarray(pos + 8, pos + 8 + len));
    pos += 8 + len;
    return s;
  };
  const skipValue = (type: number): unknown => {
    if (type === STRING) return str();
    if (type === ARRAY) {
      const itemType = view.getUint32(pos, true);
      const count = Number(view.getBigUint64(pos + 4, true));
      pos += 12;
      for (let i = 0; i < count; i++) skipValue(itemType);
      return undefined;
    }
    const size = SCALAR_SIZE[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    const v = size === 4 && type === 4 ? view.getUint32(pos, true) : undefined;
    pos += size;
    return v;
  };
  let alignment = DEFAULT_ALIGNMENT;
  for (let i = 0; i < kvCount; i++) {
    const k = str();
    const type = view.getUint32(pos, true);
    pos += 4;
    const v = skipValue(type);
    if (k === key) throw new Error(`the file already has ${key}`);
    if (k === "general.alignment" && typeof v === "number") alignment = v;
  }
  const kvEnd = pos;
  for (let i = 0; i < tensorCount; i++) {
    str();
    const dims = view.getUint32(pos, true);
    pos += 4 + dims * 8 + 4 + 8;
  }
  const infosEnd = pos;
  const dataStart = Math.ceil(infosEnd / alignment) * alignment;

  const enc = new TextEncoder();
  const k = enc.encode(key);
  const v = enc.encode(value);
  const entry = new Uint8Array(8 + k.length + 4 + 8 + v.length);
  const ev = new DataView(entry.buffer);
  ev.setBigUint64(0, BigInt(k.length), true);
  entry.set(k, 8);
  ev.setUint32(8 + k.length, STRING, true);
  ev.setBigUint64(12 + k.length, BigInt(v.length), true);
  entry.set(v, 20 + k.length);

  const newInfosEnd = infosEnd + entry.length;
  const newDataStart = Math.ceil(newInfosEnd / alignment) * alignment;
  const out = new Uint8Array(newDataStart + (gguf.length - dataStart));
  out.set(gguf.subarray(0, kvEnd), 0);
  new DataView(out.buffer).setBigUint64(16, BigInt(kvCount + 1), true);
  out.set(entry, kvEnd);
  out.set(gguf.subarray(kvEnd, infosEnd), kvEnd + entry.length);
  out.set(gguf.subarray(dataStart), newDataStart);
  return out;
}
