import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { navigate } from "../router";
import { useCan } from "../session";
import { Badge, bytes, Curl, ErrorNote, Field, Loading, Page, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

// Home: the projects, what needs attention, this month's usage at a
// glance and recent activity.
export function Home() {
  const can = useCan();
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  return (
    <Page title="Projects" actions={can("POST", "/api/projects") ? <NewProject /> : null}>
      <div class="grid-2">
        <section aria-labelledby="projects-h">
          <h2 id="projects-h">Your projects</h2>
          <ErrorNote error={projects.error} />
          {projects.data ? <ProjectTable projects={projects.data.projects} /> : !projects.error && <Loading what="projects" />}
        </section>
        <div>
          <AttentionList />
          <UsageGlance />
          <Activity />
        </div>
      </div>
    </Page>
  );
}

function ProjectTable(props: { projects: Schemas["Project"][] }) {
  if (props.projects.length === 0) return <p class="muted">No projects yet.</p>;
  return (
    <table>
      <caption class="visually-hidden">Projects</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Live address</th>
          <th scope="col">Status</th>
        </tr>
      </thead>
      <tbody>
        {props.projects.map((p) => (
          <tr key={p.id}>
            <td>
              <a href={`/projects/${p.id}`}>{p.name}</a>
            </td>
            <td>
              {p.live_url ? (
                <a href={p.live_url} target="_blank" rel="noopener noreferrer">
                  {p.live_url.replace(/^https?:\/\//, "")}
                </a>
              ) : (
                <span class="muted">not deployed</span>
              )}
            </td>
            <td>
              <Badge state={p.status} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function NewProject() {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const act = useAction(async () => {
    const { project } = await unwrap(api.POST("/api/projects", { body: { name } }));
    navigate(`/projects/${project.id}`);
  });
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        New project
      </button>
    );
  }
  return (
    <form
      class="card inline-form"
      aria-label="New project"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <Field label="Project name" name="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} hint="The address comes from the name: My Blog answers at my-blog." />
      <ErrorNote error={act.error} />
      <div class="row">
        <button type="submit" disabled={act.busy}>
          Create project
        </button>
        <button type="button" class="secondary" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
      <Curl method="POST" path="/api/projects" body={{ name }} />
    </form>
  );
}

function AttentionList() {
  const att = useLoad(() => unwrap(api.GET("/api/attention")), []);
  return (
    <section aria-labelledby="attention-h" class="card">
      <h2 id="attention-h">Needs attention</h2>
      <ErrorNote error={att.error} />
      {!att.data && !att.error && <Loading />}
      {att.data && att.data.items.length === 0 && <p class="muted">Nothing needs you now.</p>}
      {att.data && att.data.items.length > 0 && (
        <ul class="attention">
          {att.data.items.map((it, i) => (
            <li key={i} class={`sev-${it.severity}`}>
              <Badge state={it.severity} /> <a href={it.link.dashboard || "/"}>{it.reason}</a>
              {it.since && (
                <span class="muted small">
                  {" "}
                  · since <When at={it.since} />
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
      {att.data && att.data.unavailable.length > 0 && <p class="muted small">Not checked now: {att.data.unavailable.join(", ")}.</p>}
    </section>
  );
}

// The metrics shown at a glance, with how to show each.
const glance: [string, string, (n: number) => string][] = [
  ["deploys", "Deploys", (n) => n.toLocaleString()],
  ["database_queries", "Database queries", (n) => n.toLocaleString()],
  ["api_key_calls", "API calls with keys", (n) => n.toLocaleString()],
  ["ai_requests", "AI requests", (n) => n.toLocaleString()],
  ["ai_cost_micros", "AI spend", (n) => `$${(n / 1e6).toFixed(2)}`],
  ["agent_runs", "Agent runs", (n) => n.toLocaleString()],
];

function UsageGlance() {
  const usage = useLoad(() => unwrap(api.GET("/api/usage")), []);
  const r = usage.data;
  return (
    <section aria-labelledby="usage-h" class="card">
      <h2 id="usage-h">Usage this month</h2>
      <ErrorNote error={usage.error} />
      {!r && !usage.error && <Loading />}
      {r && (
        <>
          <dl class="stats">
            {glance.map(([key, label, fmt]) => (
              <div key={key}>
                <dt>{label}</dt>
                <dd>{fmt(r.totals[key] ?? 0)}</dd>
              </div>
            ))}
            <div>
              <dt>Database storage</dt>
              <dd>{bytes(r.databases.bytes)}</dd>
            </div>
            <div>
              <dt>File storage</dt>
              <dd>{bytes(r.storage.bytes)}</dd>
            </div>
          </dl>
          <p class="muted small">
            {Object.entries(r.counts)
              .filter(([, n]) => n > 0)
              .map(([k, n]) => `${n} ${k}`)
              .join(" · ") || "No resources yet"}
            {" · "}plan {r.limits.plan}
          </p>
        </>
      )}
    </section>
  );
}

function Activity() {
  const feed = useLoad(() => unwrap(api.GET("/api/activity")), []);
  const items = feed.data?.activity.slice(0, 8) ?? [];
  return (
    <section aria-labelledby="activity-h" class="card">
      <h2 id="activity-h">Recent activity</h2>
      <ErrorNote error={feed.error} />
      {feed.data && items.length === 0 && <p class="muted">Nothing yet.</p>}
      <ul class="plain">
        {items.map((e) => (
          <li key={e.id}>
            {e.summary} <span class="muted small">· <When at={e.at} /></span>
          </li>
        ))}
      </ul>
    </section>
  );
}
