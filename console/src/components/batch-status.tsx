/** A batch's status as both batch pages show it. */
import { Badge, statusTone } from "./ui.tsx";

/** the statuses in which a batch still changes (its page refreshes itself) */
export const RUNNING_BATCH = ["validating", "in_progress", "finalizing", "cancelling"];
const TONES: Record<string, string> = { in_progress: "info", validating: "info", finalizing: "info", cancelling: "warn", cancelled: "muted" };

export const BatchStatus = (p: { status: string }) => <Badge tone={TONES[p.status] ?? statusTone(p.status)}>{p.status.replace("_", " ")}</Badge>;
