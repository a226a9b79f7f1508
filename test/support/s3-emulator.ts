/**
 * An S3 emulator for tests: s3rver (npm) on a port of its own choosing (0), storing under a temp
 * directory, with one bucket. `stop()` and `start()` again (same port, same files) make an outage.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";

export interface S3Emulator {
  endpoint: string;
  bucket: string;
  /** REELAY_BLOB_STORE=s3 and the REELAY_S3_* variables pointing at this emulator */
  env: Record<string, string>;
  /** the objects' keys, as the emulator lists them */
  keys(): Promise<string[]>;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startS3Emulator(bucket = "reelay-test"): Promise<S3Emulator> {
  const directory = mkdtempSync(join(tmpdir(), "reelay-s3-"));
  let port = 0;
  let server: S3rver | null = null;
  const start = async () => {
    const s = new S3rver({ port, address: "127.0.0.1", silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] });
    const info = (await s.run()) as unknown as { port: number };
    port = info.port;
    server = s;
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  const env = {
    REELAY_BLOB_STORE: "s3",
    REELAY_S3_BUCKET: bucket,
    REELAY_S3_ENDPOINT: endpoint,
    REELAY_S3_REGION: "us-east-1",
    REELAY_S3_ACCESS_KEY_ID: "S3RVER",
    REELAY_S3_SECRET_ACCESS_KEY: "S3RVER",
  };
  return {
    endpoint,
    bucket,
    env,
    async keys() {
      const res = await Bun.s3.list({ maxKeys: 1000 }, { bucket, endpoint, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
      return (res.contents ?? []).map((o) => o.key).sort();
    },
    async stop() {
      await server?.close();
      server = null;
    },
    start,
    async close() {
      await server?.close();
      server = null;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
