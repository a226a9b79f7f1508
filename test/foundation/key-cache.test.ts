import { afterAll, beforeAll, expect, test } from "bun:test";
import { KeyAuthenticator } from "../../src/auth/authenticate-key.ts";
import { migrate, openDatabase, type Database } from "../../src/db/index.ts";
import { createAccount } from "../../src/accounts/accounts.ts";
import { createKey, revokeKey } from "../../src/accounts/api-keys.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";

let url: string;
let database: Database;
beforeAll(async () => {
  url = await createTestDatabase();
  database = await openDatabase({ databaseUrl: url, dataDir: "" });
  await migrate(database.db);
});
afterAll(async () => {
  await database.close();
  await dropDatabase(url);
});

test("a revocation made elsewhere applies once the cache entry expires (cache TTL bounds it)", async () => {
  const acct = await createAccount(database.db, "a");
  const { key, record } = await createKey(database.db, acct.id, { name: "k" });
  const otherInstance = new KeyAuthenticator(database.db, 300);
  expect((await otherInstance.authenticate(`Bearer ${key}`)).accountId).toBe(acct.id);
  await revokeKey(database.db, record.id); // e.g. through another instance's admin API
  // still cached here for at most the TTL…
  expect((await otherInstance.authenticate(`Bearer ${key}`)).keyId).toBe(record.id);
  await Bun.sleep(350);
  // …then refused
  await expect(otherInstance.authenticate(`Bearer ${key}`)).rejects.toMatchObject({ status: 401 });
});

test("with the cache, repeated requests do not hit the database", async () => {
  const acct = await createAccount(database.db, "b");
  const { key } = await createKey(database.db, acct.id, { name: "k" });
  // count statements at the driver (postgres.js), below every query helper
  const client = (database.db as unknown as { session: { client: { unsafe: (...a: unknown[]) => unknown } } }).session.client;
  const unsafe = client.unsafe;
  let queries = 0;
  client.unsafe = (...a: unknown[]) => (queries++, unsafe.apply(client, a));
  try {
    const auth = new KeyAuthenticator(database.db, 5_000);
    for (let i = 0; i < 20; i++) await auth.authenticate(`Bearer ${key}`);
    // one lookup, plus at most one (asynchronous) last_used_at update
    await Bun.sleep(50);
    expect(queries).toBeGreaterThanOrEqual(1);
    expect(queries).toBeLessThanOrEqual(2);
  } finally {
    client.unsafe = unsafe;
  }
});
