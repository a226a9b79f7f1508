/**
 * libwebp's decoder, compiled to wasm by the @cwasm/webp package. Its own index.js reads the .wasm
 * next to itself with fs at import time, which fails inside a `bun build --compile` binary; importing
 * the file `with { type: "file" }` makes Bun embed it in the binary, and we instantiate it here.
 * No network: the bytes come from the package (or the binary's embedded filesystem).
 */
import webpWasmPath from "@cwasm/webp/webp.wasm" with { type: "file" };

interface WebpExports {
  memory: WebAssembly.Memory;
  malloc(size: number): number;
  free(ptr: number): void;
  WebPDecodeRGBA(data: number, size: number, widthPtr: number, heightPtr: number): number;
}

let instance: Promise<WebpExports> | undefined;

function load(): Promise<WebpExports> {
  instance ??= (async () => {
    const code = await Bun.file(webpWasmPath).arrayBuffer();
    const unimplemented = (name: string) => () => { throw new Error(`webp wasm: syscall ${name} not implemented`); };
    const { instance } = await WebAssembly.instantiate(code, {
      wasi_snapshot_preview1: { fd_close: unimplemented("fd_close"), fd_seek: unimplemented("fd_seek"), fd_write: unimplemented("fd_write") },
    });
    return instance.exports as unknown as WebpExports;
  })();
  return instance;
}

/** Decode a WebP file to RGBA; null when libwebp refuses it. */
export async function decodeWebpRgba(bytes: Uint8Array): Promise<{ width: number; height: number; rgba: Uint8Array } | null> {
  const wasm = await load();
  const input = wasm.malloc(bytes.byteLength);
  const meta = wasm.malloc(8);
  try {
    new Uint8Array(wasm.memory.buffer, input, bytes.byteLength).set(bytes);
    const out = wasm.WebPDecodeRGBA(input, bytes.byteLength, meta, meta + 4);
    if (out === 0) return null;
    const [width, height] = new Uint32Array(wasm.memory.buffer, meta, 2) as unknown as [number, number];
    const rgba = new Uint8Array(wasm.memory.buffer, out, width * height * 4).slice();
    wasm.free(out);
    return { width, height, rgba };
  } finally {
    wasm.free(input);
    wasm.free(meta);
  }
}
