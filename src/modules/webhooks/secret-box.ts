/**
 * Webhook signing secrets at rest.
 *
 * API keys are stored as hashes because reelay only ever needs to recognise them. A webhook secret
 * is different: every delivery is signed with HMAC-SHA256 keyed by the secret itself, so a hash
 * would be useless. It is stored encrypted instead (AES-256-GCM, a fresh 96-bit IV per secret,
 * the row's id as associated data so a ciphertext copied onto another endpoint does not open),
 * under a key derived with HKDF-SHA256 from the operator's REELAY_SECRET_KEY, which never touches
 * the database: a database dump or backup alone yields no secret. It is shown to the client once,
 * at creation, and never returned again.
 *
 * Where the key comes from:
 * - REELAY_SECRET_KEY (≥ 32 characters): required with PostgreSQL, where several instances must
 *   share it; without it the webhook routes answer 503 `webhooks_not_configured`.
 * - under embedded PGlite without it: a random key in `<dataDir>/secret.key` (mode 0600), created
 *   on first boot, so webhooks work out of the box on one machine.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../../config.ts";

const VERSION = "v1";
const IV_BYTES = 12;

export interface SecretBox {
  /** short fingerprint of the key, stored in every ciphertext ("which key sealed this") */
  keyId: string;
  seal(plaintext: string, boundTo: string): string;
  open(ciphertext: string, boundTo: string): string;
}

export class SecretBoxError extends Error {}

/** `purpose` separates the keys derived from one operator secret (another purpose's ciphertexts do not open). */
export function createSecretBox(operatorSecret: string, purpose = "webhook-secrets v1"): SecretBox {
  const key = Buffer.from(hkdfSync("sha256", operatorSecret, "reelay", purpose, 32));
  const keyId = createHash("sha256").update(key).digest("hex").slice(0, 8);
  const b64 = (b: Buffer) => b.toString("base64url");
  return {
    keyId,
    seal(plaintext, boundTo) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      cipher.setAAD(Buffer.from(boundTo));
      const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [VERSION, keyId, b64(iv), b64(ct), b64(cipher.getAuthTag())].join(".");
    },
    open(ciphertext, boundTo) {
      const [version, kid, iv, ct, tag] = ciphertext.split(".");
      if (version !== VERSION || !iv || !ct || !tag) throw new SecretBoxError("not a sealed webhook secret");
      if (kid !== keyId) throw new SecretBoxError(`sealed with another REELAY_SECRET_KEY (key id ${kid}, this instance has ${keyId})`);
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
        decipher.setAAD(Buffer.from(boundTo));
        decipher.setAuthTag(Buffer.from(tag, "base64url"));
        return Buffer.concat([decipher.update(Buffer.from(ct, "base64url")), decipher.final()]).toString("utf8");
      } catch (e) {
        throw new SecretBoxError("the sealed secret does not open (altered, or bound to another row)", { cause: e });
      }
    },
  };
}

/** The box for this configuration, or null when webhooks cannot be used (PostgreSQL without REELAY_SECRET_KEY). */
export function loadSecretBox(config: Pick<Config, "secretKey" | "databaseUrl" | "dataDir">, purpose?: string): SecretBox | null {
  if (config.secretKey) return createSecretBox(config.secretKey, purpose);
  if (config.databaseUrl) return null;
  return createSecretBox(dataDirKey(config.dataDir), purpose);
}

/** `<dataDir>/secret.key`, created once (exclusively, so two readers at boot agree on one key). */
function dataDirKey(dataDir: string): string {
  const path = join(dataDir, "secret.key");
  mkdirSync(dataDir, { recursive: true });
  try {
    const fd = openSync(path, "wx", 0o600);
    try {
      writeSync(fd, randomBytes(32).toString("base64url") + "\n");
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const key = readFileSync(path, "utf8").trim();
  if (key.length < 32) throw new SecretBoxError(`${path} is shorter than 32 characters; delete it to have a new one made (existing webhook secrets then stop opening)`);
  return key;
}
