-- Lease heartbeats (10 a second per lease, src/billing/leases.ts) and refills rewrite a lease's
-- expires_at, in_flight and amount. holds_open_expiry_idx indexed expires_at, so none of these
-- updates could be HOT: each added a row version and an entry to every index of holds (5), and the
-- primary-key lookup of a long-lived lease had to step over all of them until a vacuum came by. A
-- 20-minute soak left 42,813 dead row versions against 140 live ones, and every batch statement
-- (which locks its leases by id) slowed with the lease's age: chat p99 24 -> 35 ms, GET /v1/usage
-- p50 10 -> 31 ms. Without the index no heartbeat touches an indexed column; the sweeper finds
-- expired holds through holds_account_open_idx, which holds only the open ones (in-flight requests,
-- running jobs, leases: hundreds, not the millions of closed rows). Free space on each page
-- (fillfactor 70) lets the new version stay on the lease's page, where it is pruned without vacuum.
-- The previous release's statements read the same columns and need neither (expand/contract: this
-- drops an index, nothing it reads).
DROP INDEX IF EXISTS "holds_open_expiry_idx";--> statement-breakpoint
ALTER TABLE "holds" SET (fillfactor = 70);
