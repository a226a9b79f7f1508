-- Lease heartbeats (10 a second per lease, src/billing/leases.ts) and refills rewrite a lease's
-- expires_at, in_flight and amount. holds_open_expiry_idx indexed expires_at, so none of these
-- updates could be HOT: each added a row version and an entry to every index of holds (5) until a
-- vacuum came by (12,000 heartbeats: 0 HOT, 12,000 dead versions; a 20-minute soak left 42,813 dead
-- against 140 live). Without the index no heartbeat touches an indexed column; the sweeper finds
-- expired holds through holds_account_open_idx, which holds only the open ones (in-flight requests,
-- running jobs, leases: hundreds, not the millions of closed rows). Free space on each page
-- (fillfactor 70) lets the new version stay on the lease's page, where it is pruned without vacuum
-- (the same 12,000 heartbeats: 11,873 HOT, 283 dead). The previous release's statements read the
-- same columns and need neither (expand/contract: this drops an index, nothing it reads).
DROP INDEX IF EXISTS "holds_open_expiry_idx";--> statement-breakpoint
ALTER TABLE "holds" SET (fillfactor = 70);
