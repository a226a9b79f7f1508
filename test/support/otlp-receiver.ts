/**
 * An OTLP/HTTP traces receiver for tests (what an OpenTelemetry Collector, Jaeger or Tempo does
 * on :4318/v1/traces): decodes the ExportTraceServiceRequest the SDK sends, as protobuf
 * (application/x-protobuf) or as OTLP/JSON, into plain spans. Listens on port 0.
 *
 * The protobuf reader is the wire format itself (varints and length-delimited fields) with the
 * field numbers of opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
 */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span */
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  /** 0 unset, 1 ok, 2 error */
  status: { code: number; message: string };
  startNs: bigint;
  endNs: bigint;
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** the base URL (OTEL_EXPORTER_OTLP_ENDPOINT): the exporter posts to `${url}/v1/traces` */
  url: string;
  spans: ReceivedSpan[];
  /** the content types of the export requests received */
  contentTypes: string[];
  /** export requests' headers (OTEL_EXPORTER_OTLP_HEADERS arrive here) */
  headers: Record<string, string>[];
  /** wait until `pick` finds what it wants among the spans received (the exporter sends in batches) */
  waitFor<T>(pick: (spans: ReceivedSpan[]) => T | undefined | null | false, timeoutMs?: number): Promise<T>;
  stop(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const headers: Record<string, string>[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      if (req.method !== "POST" || url.pathname !== "/v1/traces") return new Response("not found", { status: 404 });
      let body = new Uint8Array(await req.arrayBuffer());
      if (req.headers.get("content-encoding") === "gzip") body = Bun.gunzipSync(body);
      const type = req.headers.get("content-type") ?? "";
      contentTypes.push(type);
      headers.push(Object.fromEntries(req.headers));
      if (type.startsWith("application/json")) {
        spans.push(...fromJson(JSON.parse(new TextDecoder().decode(body))));
        return Response.json({});
      }
      spans.push(...fromProtobuf(body));
      // an empty ExportTraceServiceResponse
      return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    spans,
    contentTypes,
    headers,
    async waitFor(pick, timeoutMs = 15_000) {
      const until = performance.now() + timeoutMs;
      for (;;) {
        const v = pick(spans);
        if (v) return v;
        if (performance.now() > until) throw new Error(`spans not received in time; got: ${spans.map((s) => s.name).join(", ")}`);
        await Bun.sleep(25);
      }
    },
    async stop() {
      await server.stop(true);
    },
  };
}

/* ----------------------------------------------------------------- OTLP/JSON */

function jsonValue(v: any): unknown {
  if (v == null) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

const jsonAttributes = (list: any[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

function fromJson(req: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? "", name: s.name, kind: s.kind ?? 0,
          attributes: jsonAttributes(s.attributes),
          links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId, attributes: jsonAttributes(l.attributes) })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
          startNs: BigInt(s.startTimeUnixNano), endNs: BigInt(s.endTimeUnixNano), resource,
        });
  }
  return out;
}

/* ------------------------------------------------------------- OTLP protobuf */

type Field = { no: number; wire: number; varint?: bigint; bytes?: Uint8Array; fixed?: DataView };

function* fields(buf: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = () => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) yield { no, wire, varint: varint() };
    else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, bytes: buf.subarray(i, i + len) };
      i += len;
    } else if (wire === 1) {
      yield { no, wire, fixed: new DataView(buf.buffer, buf.byteOffset + i, 8) };
      i += 8;
    } else if (wire === 5) {
      yield { no, wire, fixed: new DataView(buf.buffer, buf.byteOffset + i, 4) };
      i += 4;
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
  }
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function anyValue(buf: Uint8Array): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return text(f.bytes!);
    if (f.no === 2) return f.varint !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.varint!));
    if (f.no === 4) return f.fixed!.getFloat64(0, true);
    if (f.no === 5) return [...fields(f.bytes!)].filter((x) => x.no === 1).map((x) => anyValue(x.bytes!));
  }
  return undefined;
}

function keyValue(buf: Uint8Array): [string, unknown] {
  let key = "";
  let value: unknown;
  for (const f of fields(buf)) {
    if (f.no === 1) key = text(f.bytes!);
    else if (f.no === 2) value = anyValue(f.bytes!);
  }
  return [key, value];
}

function protoSpan(buf: Uint8Array, resource: Record<string, unknown>): ReceivedSpan {
  const s: ReceivedSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, attributes: {}, links: [], status: { code: 0, message: "" }, startNs: 0n, endNs: 0n, resource };
  for (const f of fields(buf)) {
    switch (f.no) {
      case 1: s.traceId = hex(f.bytes!); break;
      case 2: s.spanId = hex(f.bytes!); break;
      case 4: s.parentSpanId = hex(f.bytes!); break;
      case 5: s.name = text(f.bytes!); break;
      case 6: s.kind = Number(f.varint); break;
      case 7: s.startNs = f.fixed!.getBigUint64(0, true); break;
      case 8: s.endNs = f.fixed!.getBigUint64(0, true); break;
      case 9: { const [k, v] = keyValue(f.bytes!); s.attributes[k] = v; break; }
      case 13: {
        const link = { traceId: "", spanId: "", attributes: {} as Record<string, unknown> };
        for (const g of fields(f.bytes!)) {
          if (g.no === 1) link.traceId = hex(g.bytes!);
          else if (g.no === 2) link.spanId = hex(g.bytes!);
          else if (g.no === 4) { const [k, v] = keyValue(g.bytes!); link.attributes[k] = v; }
        }
        s.links.push(link);
        break;
      }
      case 15:
        for (const g of fields(f.bytes!)) {
          if (g.no === 2) s.status.message = text(g.bytes!);
          else if (g.no === 3) s.status.code = Number(g.varint);
        }
        break;
    }
  }
  return s;
}

function fromProtobuf(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    const resource: Record<string, unknown> = {};
    const scopes: Uint8Array[] = [];
    for (const f of fields(rs.bytes!)) {
      if (f.no === 1) for (const a of fields(f.bytes!)) if (a.no === 1) { const [k, v] = keyValue(a.bytes!); resource[k] = v; }
      if (f.no === 2) scopes.push(f.bytes!);
    }
    for (const ss of scopes) for (const f of fields(ss)) if (f.no === 2) out.push(protoSpan(f.bytes!, resource));
  }
  return out;
}
