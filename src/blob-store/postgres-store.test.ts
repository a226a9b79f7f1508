import { afterAll, beforeAll } from "bun:test";
import { createTestDatabase, dropDatabase } from "../../test/support/harness.ts";
import { migrate, openDatabase, type Database } from "../db/index.ts";
import { blobStoreCases } from "./common-cases.test-helper.ts";
import { postgresBlobStore } from "./postgres-store.ts";
import type { BlobStore } from "./index.ts";

let url: string;
let database: Database;
let store: BlobStore;

beforeAll(async () => {
  url = await createTestDatabase();
  database = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent" });
  await migrate(database.db);
  store = postgresBlobStore(database.db);
});
afterAll(async () => {
  await database?.close();
  if (url) await dropDatabase(url);
});

blobStoreCases("postgres", { store: () => store });
