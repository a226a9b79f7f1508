/**
 * HTTP/1.1 over a raw TCP socket, for what fetch cannot send or show: a body declared with one
 * Content-Length and streamed slowly, chunked uploads of any size, methods fetch rewrites, and how
 * many bytes the server let us send before it answered or closed.
 */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** body bytes we managed to write before the server answered or closed */
  sentBodyBytes: number;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** total body bytes to send ("a" repeated), in 1 MiB writes */
  bodyBytes?: number;
  /** send the body with Transfer-Encoding: chunked instead of Content-Length */
  chunked?: boolean;
  /** a fixed body instead of bodyBytes */
  body?: string;
}

const BLOCK = new Uint8Array(1024 * 1024).fill(0x61);

export async function rawRequest(url: string, req: RawRequest, timeoutMs = 30_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  let received = "";
  let closed = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data(_s, d) {
        received += Buffer.from(d).toString("latin1");
        notify();
      },
      drain: notify,
      close() {
        closed = true;
        notify();
      },
      error() {
        closed = true;
        notify();
      },
    },
  });
  const wait = (ms: number) => new Promise<void>((r) => { wake = r; setTimeout(r, ms); });
  const answered = () => closed || /\r\n\r\n/.test(received);
  const write = async (bytes: Uint8Array | string) => {
    let data = typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes;
    while (data.byteLength > 0 && !answered()) {
      const n = socket.write(data);
      data = data.subarray(Math.max(0, n));
      if (data.byteLength > 0) await wait(1000);
    }
  };
  const headers: Record<string, string> = { host: `${hostname}:${port}`, connection: "close", ...req.headers };
  const fixed = req.body !== undefined ? Buffer.from(req.body, "utf8") : null;
  const total = fixed ? fixed.byteLength : req.bodyBytes ?? 0;
  if (req.chunked) headers["transfer-encoding"] = "chunked";
  else if (total > 0 || req.method !== "GET") headers["content-length"] ??= String(total);
  let head = `${req.method} ${req.path} HTTP/1.1\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  await write(head + "\r\n");
  let sent = 0;
  while (sent < total && !answered()) {
    const piece = fixed ? fixed.subarray(sent) : BLOCK.subarray(0, Math.min(BLOCK.byteLength, total - sent));
    if (req.chunked) await write(`${piece.byteLength.toString(16)}\r\n`);
    await write(piece);
    if (req.chunked) await write("\r\n");
    sent += piece.byteLength;
  }
  if (req.chunked && !answered()) await write("0\r\n\r\n");
  const deadline = Date.now() + timeoutMs;
  // read until the whole response is in (Content-Length) or the server closes
  for (;;) {
    const end = received.indexOf("\r\n\r\n");
    if (end >= 0) {
      const len = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, end));
      if (len && received.length >= end + 4 + Number(len[1])) break;
    }
    if (closed || Date.now() > deadline) break;
    await wait(200);
  }
  socket.end();
  const end = received.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: received, sentBodyBytes: sent };
  const [statusLine, ...lines] = received.slice(0, end).split("\r\n");
  const out: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    out[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine!.split(" ")[1]), headers: out, body: Buffer.from(received.slice(end + 4), "latin1").toString("utf8"), sentBodyBytes: sent };
}

/** Resident and peak memory of a process, MiB (Linux /proc). */
export function processMemoryMiB(pid: number): { rss: number; peak: number } {
  const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
}
