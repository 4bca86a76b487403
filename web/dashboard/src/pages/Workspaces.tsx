import { useState } from "preact/hooks";
import { api, ApiError, unwrap, type Schemas } from "../api/client";
import { navigate } from "../router";
import { useCan, useSession } from "../session";
import { Badge, bytes, Curl, ErrorNote, Field, Loading, Page } from "../components/ui";
import { useAction, useLoad } from "../components/load";

type Blocker = { kind: string; message: string; action: string };

// dollars shows an amount in cents as dollars.
function dollars(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

// micros shows an amount in millionths of a dollar as dollars.
function micros(m: number): string {
  return `$${(m / 1e6).toFixed(2)}`;
}

// limit shows a plan's limit (-1 is unlimited).
function limit(n: number, unit?: (n: number) => string): string {
  if (n < 0) return "unlimited";
  return unit ? unit(n) : String(n);
}

// Workspace: your workspaces (switch, create one), leave this one, and
// delete it (the owner, its name typed, blockers listed).
export function Workspace() {
  const { session, refresh } = useSession();
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/workspaces")), [session.workspace.id]);
  const [name, setName] = useState("");
  const [made, setMade] = useState("");
  const create = useAction(async () => {
    const { membership } = await unwrap(api.POST("/api/workspaces", { body: { name } }));
    setMade(`Created ${membership.workspace.name}: you are its owner.`);
    setName("");
    await list.reload();
  });
  const sw = useAction(async (workspaceId: string) => {
    await unwrap(api.POST("/api/session/workspace", { body: { workspaceId } }));
    await refresh();
    navigate("/");
  });
  return (
    <Page title={`Workspace ${session.workspace.name}`}>
      <p>
        On the <a href="/plan">{session.workspace.plan} plan</a>. You are {session.role === "owner" ? "its owner" : `a ${session.role}`}.
      </p>
      <div class="grid-2">
        <section aria-labelledby="ws-h">
          <h2 id="ws-h">Your workspaces</h2>
          <ErrorNote error={list.error} />
          {!list.data && !list.error && <Loading what="workspaces" />}
          {list.data && (
            <table>
              <caption class="visually-hidden">Workspaces you are a member of</caption>
              <thead>
                <tr>
                  <th scope="col">Workspace</th>
                  <th scope="col">Plan</th>
                  <th scope="col">Your role</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.workspaces.map((m) => (
                  <tr key={m.workspace.id} class={m.current ? "current" : undefined}>
                    <td>{m.workspace.name}</td>
                    <td>{m.workspace.plan}</td>
                    <td>{m.role}</td>
                    <td>
                      {m.current ? (
                        <span class="muted">current</span>
                      ) : (
                        can("POST", "/api/session/workspace") && (
                          <button type="button" class="secondary small" onClick={() => sw.run(m.workspace.id)} disabled={sw.busy}>
                            Switch to {m.workspace.name}
                          </button>
                        )
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <ErrorNote error={sw.error} />
          {list.data && list.data.workspaces.length > 1 && <Curl what="Switch" method="POST" path="/api/session/workspace" body={{ workspaceId: list.data.workspaces.find((m) => !m.current)?.workspace.id ?? "" }} />}
        </section>
        {can("POST", "/api/workspaces") && (
          <form
            class="card"
            aria-labelledby="ws-new-h"
            onSubmit={(e) => {
              e.preventDefault();
              create.run();
            }}
          >
            <h2 id="ws-new-h">Create a workspace</h2>
            <p class="muted small">On the default plan, with you as its owner. Its projects, members, keys and billing are its own.</p>
            <Field label="Name" name="wsname" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
            <ErrorNote error={create.error} />
            {made && <p role="status">{made}</p>}
            <button type="submit" disabled={create.busy}>
              Create workspace
            </button>
            <Curl method="POST" path="/api/workspaces" body={{ name }} />
          </form>
        )}
      </div>
      {can("POST", "/api/workspace/leave") && <Leave />}
      {can("DELETE", "/api/workspace") ? <DeleteWorkspace /> : <p class="muted">Deleting the workspace needs its owner.</p>}
    </Page>
  );
}

function Leave() {
  const { session, refresh } = useSession();
  const [open, setOpen] = useState(false);
  const act = useAction(async () => {
    await unwrap(api.POST("/api/workspace/leave"));
    await refresh();
    navigate("/");
  });
  return (
    <section class="card" aria-labelledby="leave-h">
      <h2 id="leave-h">Leave this workspace</h2>
      <p>Your keys in {session.workspace.name} are revoked; you move to another of your workspaces, or are signed out if it was your only one. The last owner cannot leave.</p>
      {!open ? (
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Leave workspace
        </button>
      ) : (
        <div class="row">
          <button type="button" class="danger" onClick={() => act.run()} disabled={act.busy}>
            Leave {session.workspace.name}
          </button>
          <button type="button" class="secondary" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      )}
      <ErrorNote error={act.error} />
      <Curl method="POST" path="/api/workspace/leave" />
    </section>
  );
}

function DeleteWorkspace() {
  const { session, refresh } = useSession();
  const ws = session.workspace;
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const [blockers, setBlockers] = useState<Blocker[]>([]);
  const act = useAction(async () => {
    setBlockers([]);
    try {
      await unwrap(api.DELETE("/api/workspace", { body: { confirm: typed } }));
      await refresh();
      navigate("/");
    } catch (e) {
      if (e instanceof ApiError && e.code === "deletion_blocked") {
        setBlockers((e.body as { error?: { blockers?: Blocker[] } })?.error?.blockers ?? []);
      }
      throw e;
    }
  });
  return (
    <section class="card danger-zone" aria-labelledby="ws-delete-h">
      <h2 id="ws-delete-h">Delete this workspace</h2>
      <p>Every project in it goes for good, every key is revoked and every member loses access.</p>
      {!open ? (
        <button type="button" class="danger" onClick={() => setOpen(true)}>
          Delete workspace
        </button>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            act.run();
          }}
        >
          <Field label={`Type ${ws.name} to confirm`} name="confirm" autocomplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          <div class="row">
            <button type="submit" class="danger" disabled={typed !== ws.name || act.busy}>
              Delete {ws.name} for good
            </button>
            <button type="button" class="secondary" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
          <ErrorNote error={act.error} />
          {blockers.length > 0 && (
            <div role="region" aria-label="What blocks the deletion">
              <p>Resolve these first:</p>
              <ul class="blockers">
                {blockers.map((b, i) => (
                  <li key={i}>
                    <strong>{b.kind.replace(/_/g, " ")}</strong>: {b.message} <span class="muted">{b.action}</span>
                  </li>
                ))}
              </ul>
            </div>
          )}
          <Curl method="DELETE" path="/api/workspace" body={{ confirm: typed }} />
        </form>
      )}
    </section>
  );
}

// Plans: every plan with its monthly price and limits, the current one
// marked; the owner changes plan, and sees the proration, what the Balance
// is missing, or what is over the new plan's limits as the API answers.
export function Plans() {
  const { session, refresh } = useSession();
  const can = useCan();
  const plans = useLoad(() => unwrap(api.GET("/api/plans")), []);
  const [answer, setAnswer] = useState<Schemas["PlanAnswer"] | undefined>();
  const [missing, setMissing] = useState<number | undefined>();
  const [chosen, setChosen] = useState("");
  const change = useAction(async (plan: string) => {
    setAnswer(undefined);
    setMissing(undefined);
    setChosen(plan);
    try {
      setAnswer(await unwrap(api.POST("/api/workspace/plan", { body: { plan } })));
      await refresh();
    } catch (e) {
      if (e instanceof ApiError && e.code === "balance_insufficient") {
        const m = (e.body as { error?: { missingMicros?: number } })?.error?.missingMicros;
        if (typeof m === "number") setMissing(m);
      }
      throw e;
    }
  });
  const mayChange = can("POST", "/api/workspace/plan");
  const current = session.workspace.plan;
  const rows = plans.data?.plans ?? [];
  return (
    <Page title="Plans">
      <p>
        {session.workspace.name} is on the <strong>{current}</strong> plan.{" "}
        {mayChange ? "A change is paid from the Balance, prorated over what is left of the month." : "Only the workspace's owner changes its plan."}
      </p>
      <ErrorNote error={plans.error} />
      {!plans.data && !plans.error && <Loading what="plans" />}
      {rows.length > 0 && (
        <div class="scroll">
          <table class="plans">
            <caption>Plans, their monthly price and limits</caption>
            <thead>
              <tr>
                <th scope="col">Plan</th>
                <th scope="col">Per month</th>
                <th scope="col">Databases</th>
                <th scope="col">Database storage</th>
                <th scope="col">Vector collections</th>
                <th scope="col">Media assets</th>
                <th scope="col">Payment accounts</th>
                <th scope="col">Agent runs at once</th>
                <th scope="col">AI credit</th>
                <th scope="col">Usage credit</th>
                <th scope="col">Site passwords</th>
                {mayChange && (
                  <th scope="col">
                    <span class="visually-hidden">Change</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.name} class={p.name === current ? "current" : undefined} aria-current={p.name === current ? "true" : undefined}>
                  <th scope="row">
                    {p.name} {p.name === current && <Badge state="current" />}
                  </th>
                  <td>{dollars(p.monthlyPriceCents)}</td>
                  <td>{limit(p.databases)}</td>
                  <td>{limit(p.databaseStorageBytes, bytes)}</td>
                  <td>{limit(p.vectorCollections)}</td>
                  <td>{limit(p.mediaAssets)}</td>
                  <td>{limit(p.paymentAccounts)}</td>
                  <td>{limit(p.agentConcurrentRuns)}</td>
                  <td>{dollars(p.aiCreditCents)}</td>
                  <td>{dollars(p.usageCreditCents)}</td>
                  <td>{p.sitePasswords ? "yes" : "no"}</td>
                  {mayChange && (
                    <td>
                      {p.name === current ? (
                        <span class="muted">current</span>
                      ) : p.selfServe ? (
                        <button type="button" class="secondary small" onClick={() => change.run(p.name)} disabled={change.busy}>
                          Change to {p.name}
                        </button>
                      ) : (
                        <span class="muted small">ask the operator</span>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorNote error={change.error} />
      {missing !== undefined && (
        <p class="note" role="status">
          The Balance is {micros(missing)} short of the change to {chosen}: <a href="/usage">add to the Balance</a>, then try again.
        </p>
      )}
      {answer && (
        <div class="card" role="status" aria-label="Plan changed">
          <p>
            Now on <strong>{answer.change.to}</strong> (was {answer.change.from}), paid through {new Date(answer.change.paidThrough).toLocaleDateString()}: charged {micros(answer.change.chargedMicros)}, credited{" "}
            {micros(answer.change.creditedMicros)} for the rest of {answer.change.from}; Balance now {micros(answer.change.balanceMicros)}.
          </p>
          {answer.note && <p class="muted">{answer.note}</p>}
          {answer.over.length > 0 && (
            <>
              <p class="note">Over the new plan's limits (nothing was removed; no more can be made until under):</p>
              <ul class="blockers">
                {answer.over.map((o) => (
                  <li key={o.resource}>
                    <strong>{o.resource.replace(/_/g, " ")}</strong>: {o.current} of {o.limit}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
      {mayChange && <Curl method="POST" path="/api/workspace/plan" body={{ plan: chosen || rows.find((p) => p.name !== current && p.selfServe)?.name || "pro" }} />}
      <Curl what="The plan table" method="GET" path="/api/plans" />
    </Page>
  );
}
