/**
 * An S3 object (or a byte range of it) as the body of an HTTP response, with no allocation per
 * chunk: one GET of a presigned URL over a plain socket (node:net / node:tls), each read landing in
 * a fixed 64 KiB buffer (`onread`) and copied into a ring of RING_SLOTS slots; the socket is paused
 * after every read and resumed when the response wants the next chunk, and the body is a direct
 * stream whose writes wait while the client is behind, so a slow client slows the object's download
 * instead of filling memory.
 *
 * Why not the store's get(): each chunk it reads is a new ArrayBuffer (Bun's S3 client and fetch
 * hand out fresh ones). Measured here (2-core box under load, 20 clients × 50 MB): the same bytes
 * served as views of one array grew a bare Bun.serve's RSS by 7 MB, copied into fresh 512 KiB
 * chunks by 83 MB; through reelay (bench/video-jobs.ts section 5) get() grew it by +147/+294/+325 MB,
 * this body by +81/+150/+156 MB in alternating runs. What is left is not ours to remove: reading
 * 1 GB through any Bun socket (this onread buffer or Bun.connect) grows a process by ~30 MB, and
 * Bun.serve keeps more the slower its clients read. Where that matters, REELAY_S3_PRESIGN_SECONDS
 * sends clients to the store itself.
 *
 * It speaks HTTP/1.1 to the endpoint directly (no HTTP proxy; S3 always answers a GetObject with a
 * Content-Length, anything else fails the read).
 *
 * The price: a chunk is valid only until RING_SLOTS - 1 further chunks have been read. Bun.serve
 * copies each write into the socket or its send buffer, which is the only consumer this is for;
 * anything that keeps chunks must use BlobStore.get().
 */
import net from "node:net";
import tls from "node:tls";

const READ_BYTES = 64 * 1024;
const RING_SLOTS = 4;
/** a store that sends nothing for this long has failed the download */
const IDLE_TIMEOUT_MS = 30_000;
/** an error answer's body (XML) is read up to this size, for the message */
const MAX_ERROR_BODY = 16 * 1024;

export interface ObjectResponse {
  status: number;
  /** the body's length in bytes (Content-Length) */
  length: number;
  /** the object's bytes for a 200/206; for other statuses the error body's text is in `error` */
  body: ReadableStream<Uint8Array> | null;
  error?: string;
}

/** GET `url` (presigned: no headers to sign) with an optional Range; resolves once the status and headers are in. */
export function getObjectResponse(url: string, range: { start: number; end: number } | null): Promise<ObjectResponse> {
  const u = new URL(url);
  const secure = u.protocol === "https:";
  const readBuffer = Buffer.alloc(READ_BYTES);
  const ring = Array.from({ length: RING_SLOTS }, () => new Uint8Array(READ_BYTES));
  let slot = 0;

  return new Promise<ObjectResponse>((resolve, reject) => {
    let head: Buffer | null = Buffer.alloc(0);
    let remaining = 0;
    let errorBody = "";
    let status = 0;
    const ready: Uint8Array[] = [];
    let failure: Error | null = null;
    let wake: (() => void) | null = null;
    let settled = false;
    const notify = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    const fail = (err: Error) => {
      if (failure) return;
      failure = err;
      socket.destroy();
      if (!settled) {
        settled = true;
        reject(err);
      }
      notify();
    };

    // a direct stream: Bun.serve copies each write into the socket and the write's promise waits
    // while the client is behind (a default stream's chunks are taken as fast as they come)
    const nextChunk = async (): Promise<Uint8Array | null> => {
      while (ready.length === 0 && remaining > 0 && !failure) {
        socket.resume();
        await new Promise<void>((r) => (wake = r));
      }
      if (ready.length > 0) return ready.shift()!;
      if (failure) throw failure;
      return null;
    };
    const body = new ReadableStream<Uint8Array>({
      type: "direct",
      async pull(controller: ReadableStreamDirectController) {
        try {
          for (let chunk = await nextChunk(); chunk; chunk = await nextChunk()) {
            await controller.write(chunk);
            await controller.flush();
          }
          controller.close();
        } catch (e) {
          controller.close(e as Error);
        } finally {
          socket.destroy();
        }
      },
      cancel() {
        socket.destroy();
      },
    } satisfies Bun.DirectUnderlyingSource<Uint8Array>);

    const onBody = (bytes: Uint8Array) => {
      if (bytes.byteLength === 0) return;
      if (status < 200 || status > 299) {
        if (errorBody.length < MAX_ERROR_BODY) errorBody += Buffer.from(bytes).toString("utf8");
        remaining -= bytes.byteLength;
        if (remaining <= 0) finishError();
        return;
      }
      const take = Math.min(bytes.byteLength, remaining);
      const out = ring[slot]!;
      slot = (slot + 1) % RING_SLOTS;
      out.set(bytes.subarray(0, take));
      ready.push(out.subarray(0, take));
      remaining -= take;
      notify();
    };
    const finishError = () => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ status, length: 0, body: null, error: errorBody });
    };

    const onHead = (bytes: Uint8Array): Uint8Array | null => {
      head = Buffer.concat([head!, bytes]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.byteLength > 64 * 1024) fail(new Error("the store's response headers are too large"));
        return null;
      }
      const lines = head.subarray(0, end).toString("latin1").split("\r\n");
      const rest = head.subarray(end + 4);
      head = null;
      status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
      const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")).trim().toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
      if (!status) {
        fail(new Error(`the store answered something that is not HTTP/1.1: ${lines[0]?.slice(0, 80)}`));
        return null;
      }
      const length = headers.get("content-length");
      if (length === undefined || !/^\d+$/.test(length)) {
        // S3's GetObject always sends a length; anything else (chunked) is not what we asked for
        fail(new Error(`the store's ${status} answer has no Content-Length`));
        return null;
      }
      remaining = Number(length);
      if (status >= 200 && status <= 299) {
        settled = true;
        resolve({ status, length: remaining, body });
      } else if (remaining === 0) finishError();
      return rest;
    };

    const host = u.hostname.replace(/^\[|\]$/g, ""); // an IPv6 literal without its brackets
    const options = {
      host,
      port: Number(u.port || (secure ? 443 : 80)),
      ...(secure && net.isIP(host) === 0 ? { servername: host } : {}),
      onread: {
        buffer: readBuffer,
        callback(n: number, buf: Uint8Array) {
          let bytes: Uint8Array | null = buf.subarray(0, n);
          if (head) bytes = onHead(bytes);
          if (bytes) onBody(bytes);
          // one read at a time: the next when the reader asks (pull resumes the socket)
          if (settled && status >= 200 && status <= 299 && ready.length > 0) {
            socket.pause();
            return false;
          }
          return true;
        },
      },
    };
    const request = () => {
      const rangeHeader = range ? `Range: bytes=${range.start}-${range.end}\r\n` : "";
      socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n${rangeHeader}Connection: close\r\n\r\n`);
    };
    const socket: net.Socket = secure ? tls.connect(options as tls.ConnectionOptions, request) : net.connect(options as net.NetConnectOpts, request);
    socket.setTimeout(IDLE_TIMEOUT_MS, () => fail(new Error(`the store sent nothing for ${IDLE_TIMEOUT_MS / 1000} s`)));
    socket.on("error", (e) => fail(e));
    socket.on("close", () => {
      if (remaining > 0 || head) fail(new Error(`the connection closed ${head ? "before the headers" : `with ${remaining} bytes still to come`}`));
      else notify();
    });
  });
}
