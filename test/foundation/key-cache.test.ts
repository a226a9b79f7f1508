import { afterAll, beforeAll, expect, test } from "bun:test";
import { KeyAuthenticator } from "../../src/auth/authenticate-key.ts";
import { migrate, openDatabase, type Database } from "../../src/db/index.ts";
import { createAccount, createKey, revokeKey } from "../../src/modules/accounts/service.ts";
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
  let queries = 0;
  const counting = new Proxy(database.db, { get: (t, p) => (p === "execute" ? (...a: unknown[]) => (queries++, (t as any).execute(...a)) : (t as any)[p]) });
  const auth = new KeyAuthenticator(counting as typeof database.db, 5_000);
  for (let i = 0; i < 20; i++) await auth.authenticate(`Bearer ${key}`);
  expect(queries).toBe(1);
});
