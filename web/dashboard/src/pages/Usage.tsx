import { useState } from "preact/hooks";
import { api, query, unwrap, type Schemas } from "../api/client";
import { navigate, useLocation } from "../router";
import { useCan } from "../session";
import { bytes, Curl, ErrorNote, Field, Loading, Page, Select } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { BarChart, Meter, Shares } from "../components/chart";

const periods: [string, string][] = [
  ["month", "This month"],
  ["last_month", "Last month"],
  ["7d", "Last 7 days"],
  ["30d", "Last 30 days"],
  ["90d", "Last 90 days"],
];

// The metrics drawn as daily charts, with how each is shown.
const charted: [string, string, (v: number) => string][] = [
  ["deploys", "Deploys", num],
  ["database_queries", "Database queries", num],
  ["api_key_calls", "API calls with a key", num],
  ["ai_requests", "AI requests", num],
  ["ai_cost_micros", "AI spend", dollars],
  ["emails", "E-mails", num],
  ["agent_runs", "Agent runs", num],
  ["media_minutes_processed", "Video minutes processed", num],
];

export function num(v: number): string {
  return Math.round(v).toLocaleString("en");
}

// dollars shows micro-dollars as dollars.
export function dollars(micros: number): string {
  return `$${(micros / 1e6).toFixed(micros !== 0 && Math.abs(micros) < 10000 ? 4 : 2)}`;
}

export function cents(c: number, currency = "usd"): string {
  return `${(c / 100).toFixed(2)} ${currency.toUpperCase()}`;
}

// Usage: the period's totals, daily charts per metric, by project, what
// is not measured; the plan's limits; Billing for admins.
export function Usage() {
  const loc = useLocation();
  const period = loc.query.get("period") ?? "month";
  const project = loc.query.get("project") ?? "";
  const can = useCan();
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  const rep = useLoad(() => unwrap(api.GET("/api/usage", { params: { query: query({ period, project }) } })), [period, project]);
  const set = (k: string, v: string) => {
    const q = new URLSearchParams(loc.query);
    if (v) q.set(k, v);
    else q.delete(k);
    navigate(`/usage?${q}`, { replace: true });
  };
  const r = rep.data;
  return (
    <Page title="Usage and billing">
      <form class="row" aria-label="What to show" onSubmit={(e) => e.preventDefault()}>
        <Select label="Period" name="period" options={periods} value={period} onChange={(e) => set("period", e.currentTarget.value)} />
        <Select
          label="Project"
          name="project"
          options={[["", "Every project"], ...(projects.data?.projects ?? []).map((p): [string, string] => [p.id, p.name])]}
          value={project}
          onChange={(e) => set("project", e.currentTarget.value)}
        />
      </form>
      <ErrorNote error={rep.error} />
      {!r && !rep.error && <Loading what="usage" />}
      {r && (
        <>
          <p class="muted small">
            {r.period.from.slice(0, 10)} to {r.period.to.slice(0, 10)} ({r.period.days} days)
          </p>
          <div class="grid-2">
            <section class="card" aria-labelledby="daily-h">
              <h2 id="daily-h">Day by day</h2>
              {charted
                .filter(([m]) => (r.totals[m] ?? 0) > 0)
                .map(([m, title, fmt]) => (
                  <BarChart key={m} title={title} format={fmt} points={r.daily.map((d) => ({ label: d.day, value: d.metrics[m] ?? 0 }))} />
                ))}
              {r.storage.bytes > 0 && <BarChart title="Storage" format={bytes} points={r.storage.daily.map((d) => ({ label: d.day, value: d.bytes }))} />}
              {charted.some(([m]) => (r.totals[m] ?? 0) === 0) && (
                <p class="muted small">
                  Nothing this period:{" "}
                  {charted
                    .filter(([m]) => (r.totals[m] ?? 0) === 0)
                    .map(([, title]) => title.toLowerCase())
                    .join(", ")}
                  .
                </p>
              )}
            </section>
            <div>
              <Totals r={r} />
              <Limits r={r} />
              {can("GET", "/api/billing") ? <Billing /> : <p class="note">Billing (balance and spending limit) is for admins.</p>}
            </div>
          </div>
          <section class="card" aria-labelledby="byp-h">
            <h2 id="byp-h">By project</h2>
            <Shares title="Deploys by project" format={num} points={r.byProject.map((p) => ({ label: p.name ?? p.projectId, value: p.totals["deploys"] ?? 0 }))} />
            <Shares title="Storage by project" format={bytes} points={Object.entries(r.storage.byProject).map(([id, b]) => ({ label: r.byProject.find((p) => p.projectId === id)?.name ?? id, value: b }))} />
          </section>
          {r.notMeasured.length > 0 && (
            <section class="card" aria-labelledby="nm-h">
              <h2 id="nm-h">Not measured</h2>
              <ul>
                {r.notMeasured.map((m) => (
                  <li key={m}>
                    <strong>{m.replace(/_/g, " ")}</strong>: {r.notes[m] ?? "not recorded yet"}
                  </li>
                ))}
              </ul>
            </section>
          )}
          <Curl method="GET" path={`/api/usage?period=${period}${project ? `&project=${project}` : ""}`} />
        </>
      )}
    </Page>
  );
}

function Totals(props: { r: Schemas["Report"] }) {
  const t = Object.entries(props.r.totals).filter(([, v]) => v !== null) as [string, number][];
  return (
    <section class="card" aria-labelledby="tot-h">
      <h2 id="tot-h">Totals</h2>
      <dl class="stats">
        {t.map(([k, v]) => (
          <div key={k}>
            <dt>{k.replace(/_/g, " ")}</dt>
            <dd>{k.endsWith("_micros") ? dollars(v) : k.endsWith("bytes") ? bytes(v) : num(v)}</dd>
          </div>
        ))}
        <div>
          <dt>storage</dt>
          <dd>{bytes(props.r.storage.bytes)}</dd>
        </div>
        <div>
          <dt>database storage</dt>
          <dd>{bytes(props.r.databases.bytes)}</dd>
        </div>
      </dl>
    </section>
  );
}

// The plan's limits as the report carries them.
type PlanLimits = {
  databases: number;
  vectorCollections: number;
  mediaAssets: number;
  paymentAccounts: number;
  databaseStorageBytes: number;
  aiRequestsPerMinute: number;
  aiCreditCents: number;
  usageCreditCents: number;
  agentConcurrentRuns: number;
  sitePasswords: boolean;
  storageOverage: boolean;
};

function Limits(props: { r: Schemas["Report"] }) {
  // The plan's limits are embedded in limits: their fields are at its top
  // level (the OpenAPI document nests them under Limits).
  const l = props.r.limits as unknown as PlanLimits;
  const c = props.r.counts;
  return (
    <section class="card" aria-labelledby="lim-h">
      <h2 id="lim-h">The {props.r.limits.plan} plan</h2>
      {(
        [
          ["databases", "Databases", l.databases],
          ["vectors", "Vector collections", l.vectorCollections],
          ["vector_collections", "Vector collections", l.vectorCollections],
          ["media", "Videos and channels", l.mediaAssets],
          ["payments", "Payment accounts", l.paymentAccounts],
        ] as [string, string, number][]
      )
        .filter(([k]) => c[k] !== undefined)
        .map(([k, label, lim]) => (
          <Meter key={k} label={label} used={c[k] ?? 0} limit={lim} />
        ))}
      <Meter label="Database storage" used={props.r.databases.bytes} limit={l.databaseStorageBytes} format={bytes} />
      <dl class="facts">
        <dt>AI requests a minute</dt>
        <dd>{l.aiRequestsPerMinute}</dd>
        <dt>AI credit a month</dt>
        <dd>{cents(l.aiCreditCents)}</dd>
        <dt>Usage credit a month</dt>
        <dd>{cents(l.usageCreditCents)}</dd>
        <dt>Agent runs at once</dt>
        <dd>{l.agentConcurrentRuns}</dd>
        <dt>Site passwords</dt>
        <dd>{l.sitePasswords ? "yes" : "no"}</dd>
        <dt>Storage past the limit</dt>
        <dd>{l.storageOverage ? "billed" : "refused"}</dd>
      </dl>
    </section>
  );
}

function Billing() {
  const can = useCan();
  const b = useLoad(() => unwrap(api.GET("/api/billing")), []);
  const [limit, setLimit] = useState("");
  const save = useAction(async () => {
    const v = limit.trim() === "" ? null : Math.round(Number(limit) * 1e6);
    if (v !== null && !(v >= 0)) throw new Error("the limit is a number of dollars, or empty for none");
    await unwrap(api.PUT("/api/billing/spend-limit", { body: { spendLimitMicros: v } as never }));
    await b.reload();
  });
  const s = b.data?.billing;
  return (
    <section class="card" aria-labelledby="bill-h">
      <h2 id="bill-h">Billing</h2>
      <ErrorNote error={b.error} />
      {!s && !b.error && <Loading />}
      {s && (
        <>
          <dl class="stats">
            <div>
              <dt>Balance</dt>
              <dd>{dollars(s.balanceMicros)}</dd>
            </div>
            <div>
              <dt>Available</dt>
              <dd>{dollars(s.availableMicros)}</dd>
            </div>
            <div>
              <dt>Spent in {s.month}</dt>
              <dd>{dollars(s.monthSpendMicros)}</dd>
            </div>
            <div>
              <dt>Owed</dt>
              <dd>{dollars(s.owedMicros)}</dd>
            </div>
          </dl>
          <Meter label="Included credit used" used={s.includedCreditUsedMicros} limit={s.includedCreditMicros} format={dollars} />
          <Meter label="Usage credit used" used={s.usageCreditUsedMicros} limit={s.usageCreditMicros} format={dollars} />
          {s.spendLimitMicros != null && <Meter label="Spending limit" used={s.monthSpendMicros} limit={s.spendLimitMicros} format={dollars} />}
          <p class="muted small">
            Period {s.periodStart.slice(0, 10)} to {s.periodEnd.slice(0, 10)}; held for running work {dollars(s.reservedMicros)}. Adding to the Balance is done by the operator:
            the API has no top-up call.
          </p>
          {can("PUT", "/api/billing/spend-limit") && (
            <form
              class="row"
              aria-label="Spending limit"
              onSubmit={(e) => {
                e.preventDefault();
                save.run();
              }}
            >
              <Field
                label="Monthly spending limit (dollars)"
                name="limit"
                type="number"
                min={0}
                step="0.01"
                value={limit}
                placeholder={s.spendLimitMicros != null ? String(s.spendLimitMicros / 1e6) : "none"}
                onInput={(e) => setLimit(e.currentTarget.value)}
              />
              <button type="submit" class="secondary" disabled={save.busy}>
                {limit.trim() === "" ? "Remove the limit" : "Set the limit"}
              </button>
            </form>
          )}
          <ErrorNote error={save.error} />
        </>
      )}
    </section>
  );
}
