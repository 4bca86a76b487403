import { useState } from "preact/hooks";
import { api, ApiError, query, unwrap, type Schemas } from "../api/client";
import { canOp } from "../api/perms";
import { useLocation, navigate } from "../router";
import { useCan, useSession } from "../session";
import { Badge, CopyButton, Curl, ErrorNote, Field, Loading, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { BarChart } from "../components/chart";
import { ProjectLayout } from "./Project";
import { cents } from "./Usage";

type PDetail = Schemas["payments.Detail"];

// ProjectPayments: the project's payment account: earnings, payment links,
// payments with filters, paging and refunds (the owner signed in),
// payouts, the webhook and its deliveries, and analytics.
export function ProjectPayments() {
  return <ProjectLayout tab="/payments">{(d) => <Payments project={d.project.id} />}</ProjectLayout>;
}

function Payments(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const det = useLoad(() => unwrap(api.GET("/api/projects/{id}/payments", { params: { path: { id } } })), [id]);
  const enable = useAction(async () => {
    await unwrap(api.POST("/api/projects/{id}/payments", { params: { path: { id } } }));
    await det.reload();
  });
  const notEnabled = det.error instanceof ApiError && det.error.status === 404;
  if (notEnabled) {
    return (
      <section class="card" aria-labelledby="pay-off-h">
        <h2 id="pay-off-h">Payments are off</h2>
        <p>Enable payments to take money with checkout links; a test-mode account is made first.</p>
        {can("POST", "/api/projects/{id}/payments") ? (
          <>
            <ErrorNote error={enable.error} />
            <button type="button" onClick={() => enable.run()} disabled={enable.busy}>
              Enable payments
            </button>
            <Curl method="POST" path={`/api/projects/${id}/payments`} />
          </>
        ) : (
          <p class="note">Enabling payments needs a developer or above.</p>
        )}
      </section>
    );
  }
  const d = det.data;
  return (
    <>
      <ErrorNote error={det.error} />
      {!d && !det.error && <Loading what="payments" />}
      {d && (
        <>
          <div class="grid-2">
            <Earnings d={d} reload={det.reload} />
            <NewLink d={d} reload={det.reload} />
          </div>
          <PaymentList d={d} reload={det.reload} />
          <Links d={d} />
          <div class="grid-2">
            <Webhook d={d} reload={det.reload} />
            <Analytics project={id} />
          </div>
        </>
      )}
    </>
  );
}

function Earnings(props: { d: PDetail; reload: () => Promise<void> }) {
  const { session } = useSession();
  const e = props.d.earnings;
  const a = props.d.account;
  const owner = canOp(session.role, "payments.payout");
  const next = e.next_release as { at: string; amount: number } | null | undefined;
  const limit = e.payout_limit as { reason: string; message: string; until?: string } | null | undefined;
  const withdraw = useAction(async (action: "withdraw" | "withdraw-setup") => {
    await unwrap(api.PATCH("/api/payments/{accountId}", { params: { path: { accountId: a.id } }, body: { action } }));
    await props.reload();
  });
  return (
    <section class="card" aria-labelledby="earn-h">
      <h2 id="earn-h">Earnings</h2>
      <p>
        <Badge state={a.status} /> {a.livemode ? "live mode" : "test mode"} · processor {a.processor} · payouts {a.payouts_enabled ? "set up" : "not set up"}
      </p>
      <dl class="stats">
        <div>
          <dt>Balance</dt>
          <dd>{cents(e.balance, e.currency)}</dd>
        </div>
        <div>
          <dt>Held</dt>
          <dd>{cents(e.held, e.currency)}</dd>
        </div>
        <div>
          <dt>Available</dt>
          <dd>{cents(e.available, e.currency)}</dd>
        </div>
        <div>
          <dt>Withdrawn</dt>
          <dd>{cents(e.withdrawn, e.currency)}</dd>
        </div>
        <div>
          <dt>Refunded</dt>
          <dd>{cents(e.refunded, e.currency)}</dd>
        </div>
        <div>
          <dt>Fees</dt>
          <dd>{cents(e.fees, e.currency)}</dd>
        </div>
      </dl>
      {next && (
        <p class="small">
          Next release: {cents(next.amount, e.currency)} <When at={next.at} />.
        </p>
      )}
      {limit && <p class="note">{limit.message}</p>}
      <h3>Payouts</h3>
      {owner ? (
        <div class="row">
          {!a.payouts_enabled && (
            <button type="button" class="secondary" onClick={() => withdraw.run("withdraw-setup")} disabled={withdraw.busy}>
              Set up payouts
            </button>
          )}
          <button type="button" onClick={() => withdraw.run("withdraw")} disabled={withdraw.busy || e.payout_now <= 0}>
            Withdraw {cents(e.payout_now, e.currency)}
          </button>
        </div>
      ) : (
        <p class="note">Withdrawals and refunds need the owner signed in to the dashboard.</p>
      )}
      <ErrorNote error={withdraw.error} />
      {props.d.withdrawals.length > 0 && (
        <table>
          <caption class="visually-hidden">Withdrawals</caption>
          <thead>
            <tr>
              <th scope="col">Amount</th>
              <th scope="col">State</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {props.d.withdrawals.map((w) => (
              <tr key={w.id}>
                <td>{cents(w.amount_cents, e.currency)}</td>
                <td>
                  <Badge state={w.status} />
                  {w.last_error && <div class="error small">{w.last_error}</div>}
                </td>
                <td>
                  <When at={w.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function NewLink(props: { d: PDetail; reload: () => Promise<void> }) {
  const can = useCan();
  const acct = props.d.account.id;
  const [amount, setAmount] = useState("");
  const [description, setDescription] = useState("");
  const [made, setMade] = useState<Schemas["payments.Created"]>();
  const body = () => ({ amountCents: Math.round(Number(amount) * 100), ...(description ? { description } : {}) });
  const act = useAction(async () => {
    setMade(await unwrap(api.POST("/api/payments/{accountId}", { params: { path: { accountId: acct } }, body: body() })));
    await props.reload();
  });
  if (!can("POST", "/api/payments/{accountId}")) return <p class="note">Creating payment links needs a developer or above.</p>;
  return (
    <form
      class="card"
      aria-labelledby="link-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="link-h">Create a payment link</h2>
      <Field label="Amount (dollars)" name="amount" type="number" min={0.5} step="0.01" required value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
      <Field label="Description (optional)" name="description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      <ErrorNote error={act.error} />
      <button type="submit" disabled={act.busy}>
        Create link
      </button>
      {made && (
        <div class="secret" role="status">
          <p>
            The link (fee {cents(made.feeCents)}):{" "}
            <a href={made.url} target="_blank" rel="noopener noreferrer" class="mono break">
              {made.url}
            </a>
          </p>
          <CopyButton text={made.url} label="Copy link" />
        </div>
      )}
      <Curl method="POST" path={`/api/payments/${acct}`} body={body()} />
    </form>
  );
}

const statuses: [string, string][] = [
  ["", "Any state"],
  ["succeeded", "succeeded"],
  ["refunded", "refunded"],
  ["partially_refunded", "partially refunded"],
  ["disputed", "disputed"],
  ["dispute_lost", "dispute lost"],
];

function PaymentList(props: { d: PDetail; reload: () => Promise<void> }) {
  const loc = useLocation();
  const acct = props.d.account.id;
  const status = loc.query.get("status") ?? "";
  const cursor = loc.query.get("cursor") ?? "";
  const list = useLoad(
    () => unwrap(api.GET("/api/payments/{accountId}/payments", { params: { path: { accountId: acct }, query: query({ status, cursor, limit: 20 }) } })),
    [acct, status, cursor, props.d],
  );
  const go = (q: Record<string, string>) => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) u.set(k, v);
    navigate(`${loc.path}${u.toString() ? `?${u}` : ""}`);
  };
  const rows = list.data?.data ?? [];
  return (
    <section aria-labelledby="pays-h">
      <div class="row spread">
        <h2 id="pays-h">Payments</h2>
        <form class="row" aria-label="Filter payments" onSubmit={(e) => e.preventDefault()}>
          <Select label="State" name="status" options={statuses} value={status} onChange={(e) => go({ status: e.currentTarget.value })} />
        </form>
      </div>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="payments" />}
      {list.data && rows.length === 0 && <p class="muted">No payments{status ? ` ${status.replace(/_/g, " ")}` : ""} yet.</p>}
      {rows.length > 0 && (
        <table>
          <caption class="visually-hidden">Payments, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Amount</th>
              <th scope="col">State</th>
              <th scope="col">Customer</th>
              <th scope="col">When</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((p) => (
              <PaymentRow key={p.id} p={p} acct={acct} onChange={props.reload} />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Payment pages">
        {cursor && (
          <button type="button" class="secondary" onClick={() => history.back()}>
            ← Newer
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => go({ status, cursor: list.data!.nextCursor! })}>
            Older →
          </button>
        )}
      </nav>
    </section>
  );
}

function PaymentRow(props: { p: Schemas["Payment"]; acct: string; onChange: () => Promise<void> }) {
  const { p } = props;
  const { session } = useSession();
  const [confirm, setConfirm] = useState(false);
  const left = p.amount_cents - p.refunded_cents;
  const refund = useAction(async () => {
    await unwrap(api.PATCH("/api/payments/{accountId}", { params: { path: { accountId: props.acct } }, body: { action: "refund", paymentId: p.id } }));
    setConfirm(false);
    await props.onChange();
  });
  const owner = canOp(session.role, "payments.payout");
  return (
    <tr>
      <td>
        {cents(p.amount_cents, p.currency)}
        {p.refunded_cents > 0 && <div class="muted small">refunded {cents(p.refunded_cents, p.currency)}</div>}
      </td>
      <td>
        <Badge state={p.status} />
        {p.dispute_status && <div class="small">dispute: {p.dispute_status}</div>}
      </td>
      <td>
        {p.customer_email || <span class="muted">—</span>}
        {p.reference && <div class="muted small">ref {p.reference}</div>}
      </td>
      <td>
        <When at={p.created_at} />
      </td>
      <td class="actions">
        {owner && left > 0 && p.status !== "disputed" && (
          <>
            {confirm ? (
              <>
                <button type="button" class="danger small" onClick={() => refund.run()} disabled={refund.busy}>
                  Refund {cents(left, p.currency)}
                </button>
                <button type="button" class="secondary small" onClick={() => setConfirm(false)}>
                  Keep
                </button>
              </>
            ) : (
              <button type="button" class="secondary small" onClick={() => setConfirm(true)}>
                Refund<span class="visually-hidden"> {p.id}</span>
              </button>
            )}
          </>
        )}
        {!owner && left > 0 && <span class="muted small">Refunds: the owner</span>}
        <ErrorNote error={refund.error} />
      </td>
    </tr>
  );
}

// Links: the account's checkout sessions (each a payment link), with a
// state filter and paging.
function Links(props: { d: PDetail }) {
  const acct = props.d.account.id;
  const [state, setState] = useState("");
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1] ?? "";
  const list = useLoad(
    () => unwrap(api.GET("/api/payments/{accountId}/sessions", { params: { path: { accountId: acct }, query: query({ status: state, cursor, limit: 20 }) } })),
    [acct, state, cursor, props.d],
  );
  const links = list.data?.data ?? [];
  return (
    <section aria-labelledby="links-h">
      <div class="row spread">
        <h2 id="links-h">Payment links</h2>
        <form class="row" aria-label="Filter payment links" onSubmit={(e) => e.preventDefault()}>
          <Select
            label="Link state"
            name="sessionStatus"
            options={[["", "Any state"], ["open", "open"], ["paid", "paid"], ["expired", "expired"]]}
            value={state}
            onChange={(e) => {
              setState(e.currentTarget.value);
              setCursors([]);
            }}
          />
        </form>
      </div>
      <ErrorNote error={list.error} />
      {list.data && links.length === 0 && <p class="muted">No links{state ? ` ${state}` : ""}.</p>}
      {links.length > 0 && (
        <table>
          <caption class="visually-hidden">Payment links, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Amount</th>
              <th scope="col">State</th>
              <th scope="col">Description</th>
              <th scope="col">Link</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            {links.map((l) => (
              <tr key={l.id}>
                <td>{cents(l.amount_cents, l.currency)}</td>
                <td>
                  <Badge state={l.state} />
                </td>
                <td>{l.description}</td>
                <td>
                  <a href={l.url} target="_blank" rel="noopener noreferrer" class="mono small">
                    {l.id}
                  </a>
                </td>
                <td>
                  <When at={l.expires_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Payment link pages">
        {cursor && (
          <button type="button" class="secondary" onClick={() => setCursors((c) => c.slice(0, -1))}>
            ← Newer
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => setCursors((c) => [...c, list.data!.nextCursor!])}>
            Older →
          </button>
        )}
      </nav>
    </section>
  );
}

function Webhook(props: { d: PDetail; reload: () => Promise<void> }) {
  const can = useCan();
  const a = props.d.account;
  const [url, setUrl] = useState(a.webhook_url);
  const [secret, setSecret] = useState("");
  const act = useAction(async (action: "set-webhook" | "rotate-webhook-secret" | "test-webhook") => {
    const out = await unwrap(
      api.PATCH("/api/payments/{accountId}", { params: { path: { accountId: a.id } }, body: action === "set-webhook" ? { action, webhookUrl: url } : { action } }),
    );
    const s = (out as { secret?: string }).secret;
    if (s) setSecret(s);
    await props.reload();
  });
  const may = can("POST", "/api/payments/{accountId}");
  return (
    <section class="card" aria-labelledby="hook-h">
      <h2 id="hook-h">Webhook</h2>
      {may ? (
        <form
          aria-label="Webhook address"
          onSubmit={(e) => {
            e.preventDefault();
            act.run("set-webhook");
          }}
        >
          <Field label="Webhook URL" name="webhookUrl" type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} hint={a.webhook_secret_hint ? `Signing secret ends …${a.webhook_secret_hint}` : undefined} />
          <div class="row">
            <button type="submit" disabled={act.busy}>
              Save webhook
            </button>
            {a.webhook_url && (
              <>
                <button type="button" class="secondary" onClick={() => act.run("rotate-webhook-secret")} disabled={act.busy}>
                  Rotate secret
                </button>
                <button type="button" class="secondary" onClick={() => act.run("test-webhook")} disabled={act.busy}>
                  Send a test
                </button>
              </>
            )}
          </div>
          <ErrorNote error={act.error} />
          {secret && (
            <div class="secret" role="status">
              <p>The signing secret, shown only now:</p>
              <p class="mono break">{secret}</p>
              <CopyButton text={secret} label="Copy secret" />
            </div>
          )}
          <Curl method="PATCH" path={`/api/payments/${a.id}`} body={{ action: "set-webhook", webhookUrl: url }} />
        </form>
      ) : (
        <p>{a.webhook_url ? <span class="mono">{a.webhook_url}</span> : <span class="muted">No webhook.</span>}</p>
      )}
      <h3 id="deliv-h">Deliveries</h3>
      {props.d.deliveries.length === 0 ? (
        <p class="muted">No deliveries yet.</p>
      ) : (
        <table aria-labelledby="deliv-h">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Result</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {props.d.deliveries.map((d) => (
              <tr key={d.id}>
                <td class="mono small">{d.type}</td>
                <td>
                  <Badge state={d.status} /> {d.last_status_code ? <span class="small">HTTP {d.last_status_code}</span> : null}
                  <div class="small muted">
                    {d.attempts} attempt{d.attempts === 1 ? "" : "s"}
                    {d.next_attempt_at && (
                      <>
                        , next <When at={d.next_attempt_at} />
                      </>
                    )}
                  </div>
                  {d.last_error && <div class="error small">{d.last_error}</div>}
                </td>
                <td>
                  <When at={d.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Analytics(props: { project: string }) {
  const an = useLoad(() => unwrap(api.GET("/api/projects/{id}/payments/analytics", { params: { path: { id: props.project } } })), [props.project]);
  const a = an.data;
  return (
    <section class="card" aria-labelledby="an-h">
      <h2 id="an-h">Analytics</h2>
      <ErrorNote error={an.error} />
      {a && (
        <>
          <dl class="stats">
            <div>
              <dt>Links made</dt>
              <dd>{a.funnel.created}</dd>
            </div>
            <div>
              <dt>Paid</dt>
              <dd>{a.funnel.paid}</dd>
            </div>
            <div>
              <dt>Conversion</dt>
              <dd>{(a.funnel.conversion_bp / 100).toFixed(1)}%</dd>
            </div>
            <div>
              <dt>Gross</dt>
              <dd>{cents(a.totals.gross_cents, a.totals.currency)}</dd>
            </div>
          </dl>
          <BarChart title="Gross a day" format={(v) => cents(v, a.totals.currency)} points={a.daily.map((d) => ({ label: d.date, value: d.gross_cents }))} />
        </>
      )}
    </section>
  );
}
