import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecretBox, loadSecretBox, SecretBoxError } from "./secret-box.ts";

const KEY = "operator-secret-key-0123456789abcdefghij";

describe("webhook secrets at rest", () => {
  test("sealed with AES-GCM under the operator key; opens only for its own row and key", () => {
    const box = createSecretBox(KEY);
    const sealed = box.seal("whsec_abc", "we_1");
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(sealed).not.toContain("abc");
    expect(box.seal("whsec_abc", "we_1")).not.toBe(sealed); // fresh IV each time
    expect(box.open(sealed, "we_1")).toBe("whsec_abc");
    expect(() => box.open(sealed, "we_2")).toThrow(SecretBoxError);
    expect(() => createSecretBox(KEY + "x").open(sealed, "we_1")).toThrow(/another REELAY_SECRET_KEY/);
    const parts = sealed.split(".");
    parts[3] = Buffer.from("tampered").toString("base64url");
    expect(() => box.open(parts.join("."), "we_1")).toThrow(SecretBoxError);
  });

  test("REELAY_SECRET_KEY wins; PGlite without it keeps a 0600 key file; Postgres without it has none", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "reelay-box-"));
    const a = loadSecretBox({ secretKey: null, databaseUrl: null, dataDir })!;
    const b = loadSecretBox({ secretKey: null, databaseUrl: null, dataDir })!;
    expect(a.open(b.seal("s", "x"), "x")).toBe("s");
    expect(statSync(join(dataDir, "secret.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dataDir, "secret.key"), "utf8").trim().length).toBeGreaterThanOrEqual(32);
    expect(loadSecretBox({ secretKey: null, databaseUrl: "postgres://x/y", dataDir })).toBeNull();
    expect(loadSecretBox({ secretKey: KEY, databaseUrl: "postgres://x/y", dataDir })!.keyId).toBe(createSecretBox(KEY).keyId);
  });
});
