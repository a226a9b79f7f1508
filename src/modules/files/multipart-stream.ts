/**
 * A streaming multipart/form-data reader (RFC 7578) for uploads too large to buffer: each part's
 * bytes are handed on as they arrive, with at most a boundary's length held back. http/json-body.ts
 * reads small forms whole (Response.formData); POST /v1/files takes up to REELAY_FILES_MAX_BYTES.
 */
import { badRequest } from "../../errors.ts";

export interface PartHandler {
  /** a part begins: its field name and, for a file, its filename */
  start(part: { name: string; filename: string | null; contentType: string | null }): void | Promise<void>;
  data(chunk: Uint8Array): void | Promise<void>;
  end(): void | Promise<void>;
}

const MAX_HEADER_BYTES = 16 * 1024;
const invalidForm = (why: string) => badRequest(`We could not parse the multipart/form-data body of your request: ${why}.`, null, "invalid_form");

export function boundaryOf(contentType: string | null): string | null {
  const m = /^multipart\/form-data\s*;.*?\bboundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? "");
  return m ? (m[1] ?? m[2] ?? null) : null;
}

export async function readMultipart(body: ReadableStream<Uint8Array>, boundary: string, handler: PartHandler): Promise<void> {
  const first = Buffer.from(`--${boundary}`);
  const between = Buffer.from(`\r\n--${boundary}`);
  let buf: Buffer = Buffer.alloc(0);
  let state: "preamble" | "after-delimiter" | "headers" | "body" | "done" = "preamble";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    if (state === "done") continue; // an epilogue is ignored
    buf = buf.length ? Buffer.concat([buf, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (;;) {
      if (state === "preamble") {
        const i = buf.indexOf(first);
        if (i < 0) { buf = buf.subarray(Math.max(0, buf.length - first.length)); break; }
        buf = buf.subarray(i + first.length);
        state = "after-delimiter";
      }
      if (state === "after-delimiter") {
        if (buf.length < 2) break;
        if (buf[0] === 0x2d && buf[1] === 0x2d) { state = "done"; break; }
        if (buf[0] !== 0x0d || buf[1] !== 0x0a) throw invalidForm("a boundary is not followed by a line break");
        buf = buf.subarray(2);
        state = "headers";
      }
      if (state === "headers") {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) {
          if (buf.length > MAX_HEADER_BYTES) throw invalidForm("a part's headers are too long");
          break;
        }
        await handler.start(partHeaders(buf.subarray(0, end).toString("utf8")));
        buf = buf.subarray(end + 4);
        state = "body";
      }
      if (state === "body") {
        const i = buf.indexOf(between);
        if (i < 0) {
          const keep = between.length - 1;
          if (buf.length > keep) {
            await handler.data(new Uint8Array(buf.subarray(0, buf.length - keep)));
            buf = Buffer.from(buf.subarray(buf.length - keep));
          }
          break;
        }
        if (i > 0) await handler.data(new Uint8Array(buf.subarray(0, i)));
        await handler.end();
        buf = buf.subarray(i + between.length);
        state = "after-delimiter";
        continue;
      }
      if (state === "done") break;
    }
  }
  if (state !== "done") throw invalidForm("the body ended before its closing boundary");
}

function partHeaders(text: string): { name: string; filename: string | null; contentType: string | null } {
  let disposition = "";
  let contentType: string | null = null;
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === "content-disposition") disposition = value;
    else if (key === "content-type") contentType = value;
  }
  const param = (p: string) => {
    const m = new RegExp(`;\\s*${p}="((?:[^"\\\\]|\\\\.)*)"`, "i").exec(disposition) ?? new RegExp(`;\\s*${p}=([^;\\s]+)`, "i").exec(disposition);
    return m ? m[1]!.replace(/\\(.)/g, "$1") : null;
  };
  const name = param("name");
  if (name === null) throw invalidForm("a part has no name");
  return { name, filename: param("filename"), contentType };
}
