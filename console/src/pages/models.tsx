import type { Api } from "../api.ts";
import { Async, Badge, Card, statusTone, Table } from "../components/ui.tsx";
import { fmtInt, fmtMs, fmtPct, fmtTime } from "../format.ts";
import { useLoad } from "../hooks.ts";
import { formatUsd } from "../money.ts";

const price = (micros: number | null, unit: string) => (micros === null ? null : `${formatUsd(micros)} ${unit}`);
/** a deployment's circuit as a badge: closed is serving, half open is on probation, open is cut off */
const CIRCUIT: Record<string, { tone: string; text: string }> = { closed: { tone: "ok", text: "closed" }, half_open: { tone: "warn", text: "half open" }, open: { tone: "bad", text: "open" } };

/** A model's upstream deployments as this instance routes them (GET /admin/upstreams). */
function Deployments(p: { deployments: any[] }) {
  return (
    <ul class="deployments" aria-label="Deployments">
      {p.deployments.map((d) => {
        const circuit = CIRCUIT[d.state] ?? { tone: "", text: d.state };
        return (
          <li>
            <span class="mono">{d.name}</span> <Badge tone={circuit.tone}>circuit {circuit.text}</Badge>{" "}
            <span class="small">
              weight {d.weight}, {fmtInt(d.in_flight)} in flight{d.max_concurrent !== null ? ` of ${fmtInt(d.max_concurrent)}` : ""}, {fmtInt(d.requests)} requests
              {d.recent_error_rate !== null ? `, ${fmtPct(d.recent_error_rate)} failing lately` : ""}{d.latency_ms !== null ? `, ${fmtMs(Math.round(d.latency_ms))}` : ""}
            </span>
          </li>
        );
      })}
    </ul>
  );
}

export function Models(p: { api: Api }) {
  const models = useLoad((sig) => p.api.get("/admin/models", sig), [], { refreshMs: 15_000 });
  // per deployment, per instance; a failure here leaves the models table as it is
  const upstreams = useLoad((sig) => p.api.get("/admin/upstreams", sig), [], { refreshMs: 15_000 });
  const deployments = (id: string): any[] => (upstreams.data as any)?.data?.find((u: any) => u.model === id)?.deployments ?? [];
  return (
    <>
      <div class="page-head"><h1>Models</h1></div>
      <Card>
        <Async state={models} empty={(d: any) => d.data.length === 0} emptyText="No models are configured.">
          {(d: any) => (
            <Table label="Models">
              <thead><tr><th>Model</th><th>Plugin</th><th>Does</th><th>Prices</th><th>State</th><th>Upstream health (15 min)</th></tr></thead>
              <tbody>
                {d.data.map((m: any) => (
                  <tr>
                    <td class="mono">{m.id}</td>
                    <td>{m.plugin}</td>
                    <td>{m.capabilities.join(", ")}</td>
                    <td class="prices">
                      {[price(m.pricing.input_per_million, "/ 1M input tokens"), price(m.pricing.output_per_million, "/ 1M output tokens"), price(m.pricing.cached_input_per_million, "/ 1M cached input tokens"), price(m.pricing.cache_write_per_million, "/ 1M cache-write tokens"), price(m.pricing.per_second, "/ video second")].filter(Boolean).map((t) => <div>{t}</div>)}
                    </td>
                    <td>
                      <Badge tone={statusTone(m.state)}>{m.state}</Badge>
                      {m.state === "unloaded" && <div class="small muted">loads on its first request</div>}
                      {m.state_error && <div class="small muted">load failed: {m.state_error}</div>}
                    </td>
                    <td>
                      <Badge tone={statusTone(m.health.status)}>{m.health.status}</Badge>{" "}
                      <span class="small">{fmtInt(m.health.requests)} requests, {fmtInt(m.health.errors)} failed{m.health.error_rate ? ` (${fmtPct(m.health.error_rate)})` : ""}</span>
                      {m.health.client_errors > 0 && <div class="small muted">{fmtInt(m.health.client_errors)} client {m.health.client_errors === 1 ? "error" : "errors"} (the request's own fault: not held against the model)</div>}
                      {m.health.last_error_at && <div class="small muted">last failure {fmtTime(m.health.last_error_at)}{m.health.last_error_code ? ` · ${m.health.last_error_code}` : ""}</div>}
                      {deployments(m.id).length > 0 && <Deployments deployments={deployments(m.id)} />}
                    </td>
                  </tr>
                ))}
              </tbody>
            </Table>
          )}
        </Async>
      </Card>
    </>
  );
}
