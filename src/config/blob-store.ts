/** Where MP4s, thumbnails and uploads are kept: REELAY_BLOB_STORE, REELAY_S3_*. */
import { ConfigError } from "../errors.ts";
import { bool, int, str, type Env } from "./env.ts";

/** REELAY_BLOB_STORE and, for `s3`, REELAY_S3_* (AWS_* names are read as fallbacks) */
export interface BlobStoreConfig {
  kind: "postgres" | "s3";
  s3: S3Config | null;
  /** > 0: /content answers a 302 to a presigned URL valid this long (s3 only); 0: reelay streams the bytes */
  presignSeconds: number;
}

export interface S3Config {
  bucket: string;
  /** e.g. https://s3.eu-west-1.amazonaws.com, https://<account>.r2.cloudflarestorage.com, http://minio:9000 */
  endpoint: string | null;
  region: string | null;
  accessKeyId: string | null;
  secretAccessKey: string | null;
  sessionToken: string | null;
  /** bucket in the host name (AWS style) instead of the path (MinIO and most emulators) */
  virtualHostedStyle: boolean;
}

export function blobStoreConfig(env: Env): BlobStoreConfig {
  const kind = str(env, "REELAY_BLOB_STORE") ?? "postgres";
  if (kind !== "postgres" && kind !== "s3") throw new ConfigError("REELAY_BLOB_STORE", `must be postgres or s3, got "${kind}"`);
  const presignSeconds = int(env, "REELAY_S3_PRESIGN_SECONDS", 0, 0, 7 * 86_400);
  if (kind === "postgres") {
    if (presignSeconds > 0) throw new ConfigError("REELAY_S3_PRESIGN_SECONDS", "presigned redirects need REELAY_BLOB_STORE=s3");
    return { kind, s3: null, presignSeconds: 0 };
  }
  const pick = (...keys: string[]) => keys.map((k) => str(env, k)).find((v) => v !== null) ?? null;
  const bucket = pick("REELAY_S3_BUCKET", "S3_BUCKET", "AWS_BUCKET");
  if (!bucket) throw new ConfigError("REELAY_S3_BUCKET", "REELAY_BLOB_STORE=s3 needs a bucket name");
  const endpoint = pick("REELAY_S3_ENDPOINT", "S3_ENDPOINT", "AWS_ENDPOINT");
  if (endpoint && !/^https?:\/\//.test(endpoint)) throw new ConfigError("REELAY_S3_ENDPOINT", "must be an http or https URL");
  return {
    kind,
    presignSeconds,
    s3: {
      bucket,
      endpoint,
      region: pick("REELAY_S3_REGION", "S3_REGION", "AWS_REGION"),
      accessKeyId: pick("REELAY_S3_ACCESS_KEY_ID", "S3_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
      secretAccessKey: pick("REELAY_S3_SECRET_ACCESS_KEY", "S3_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
      sessionToken: pick("REELAY_S3_SESSION_TOKEN", "S3_SESSION_TOKEN", "AWS_SESSION_TOKEN"),
      // path style unless told otherwise: what MinIO, R2 and emulators take; AWS takes both
      virtualHostedStyle: !bool(env, "REELAY_S3_PATH_STYLE", true),
    },
  };
}
