import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { api, ApiError, unwrap, type Schemas } from "../api/client";
import { cli } from "../api/curl";
import { navigate, useLocation, useParams } from "../router";
import { useCan, useSession } from "../session";
import { Badge, bytes, Curl, duration, ErrorNote, Field, Loading, Page, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

type Detail = Schemas["Detail"];
type Deployment = Schemas["Deployment"];

// ProjectLayout loads the project and puts its tabs around a page.
export function ProjectLayout(props: { tab: string; children: (d: Detail, reload: () => Promise<void>) => ComponentChildren }) {
  const { id } = useParams() as { id: string };
  const detail = useLoad(() => unwrap(api.GET("/api/projects/{id}", { params: { path: { id } } })), [id]);
  const d = detail.data;
  const tabs: [string, string][] = [
    ["", "Overview"],
    ["/deployments", "Deployments"],
    ["/variables", "Variables"],
    ["/databases", "Databases"],
    ["/payments", "Payments"],
    ["/media", "Media"],
    ["/vectors", "Vectors"],
    ["/agents", "Agents"],
    ["/mail", "Mail"],
    ["/auth-pools", "Sign-in pools"],
    ["/memory", "Memory"],
    ["/buckets", "Buckets"],
    ["/domains", "Domains"],
    ["/settings", "Settings"],
  ];
  const title = d ? `${d.project.name}${props.tab ? ` · ${tabs.find(([t]) => t === props.tab)?.[1]}` : ""}` : "Project";
  return (
    <Page title={title}>
      <ErrorNote error={detail.error} />
      {!d && !detail.error && <Loading what="the project" />}
      {d && (
        <>
          <p class="project-line">
            <Badge state={d.serving.state} />{" "}
            {d.project.live_url ? (
              <a href={d.project.live_url} target="_blank" rel="noopener noreferrer">
                {d.project.live_url}
              </a>
            ) : (
              <span class="muted">Not live yet: it will answer at {d.project.url}</span>
            )}
          </p>
          <nav aria-label="Project" class="tabs">
            <ul>
              {tabs.map(([t, text]) => (
                <li key={t}>
                  <a href={`/projects/${id}${t}`} aria-current={props.tab === t ? "page" : undefined}>
                    {text}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
          {props.children(d, detail.reload)}
        </>
      )}
    </Page>
  );
}

export function ProjectOverview() {
  return (
    <ProjectLayout tab="">
      {(d, reload) => (
        <div class="grid-2">
          <section class="card" aria-labelledby="serving-h">
            <h2 id="serving-h">Serving</h2>
            <Serving d={d} />
            <DeployButton d={d} onDone={reload} />
          </section>
          <section class="card" aria-labelledby="services-h">
            <h2 id="services-h">Services</h2>
            <Services d={d} />
          </section>
        </div>
      )}
    </ProjectLayout>
  );
}

function Serving(props: { d: Detail }) {
  const dep = props.d.serving.deployment as Partial<Deployment> | null;
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>
        <Badge state={props.d.serving.state} />
      </dd>
      <dt>Live address</dt>
      <dd>{props.d.project.live_url ?? <span class="muted">none yet</span>}</dd>
      <dt>Deployment</dt>
      <dd>
        {dep?.id ? (
          <a href={`/projects/${props.d.project.id}/deployments/${dep.id}`}>
            {dep.kind ?? "deployment"} {dep.commit ? `of commit ${dep.commit}` : ""} <span class="muted">({dep.state})</span>
          </a>
        ) : (
          <span class="muted">none</span>
        )}
      </dd>
      <dt>Deploy will</dt>
      <dd>{props.d.deployAction.description}</dd>
    </dl>
  );
}

function Services(props: { d: Detail }) {
  const entries = Object.entries(props.d.services).filter(([, n]) => n > 0);
  if (entries.length === 0) return <p class="muted">No services yet.</p>;
  const base = `/projects/${props.d.project.id}`;
  const links: Record<string, string> = {
    databases: `${base}/databases`,
    vectors: `${base}/vectors`,
    "vector collections": `${base}/vectors`,
    media: `${base}/media`,
    agents: `${base}/agents`,
    buckets: `${base}/buckets`,
    "storage buckets": `${base}/buckets`,
    payments: `${base}/payments`,
    memory: `${base}/memory`,
    "memory stores": `${base}/memory`,
    mail: `${base}/mail`,
    "auth pools": `${base}/auth-pools`,
  };
  return (
    <ul class="plain">
      {entries.map(([name, n]) => (
        <li key={name}>
          {links[name] ? <a href={links[name]}>{`${n} ${name}`}</a> : `${n} ${name}`}
        </li>
      ))}
    </ul>
  );
}

// DeployButton does what the project's deployAction says.
function DeployButton(props: { d: Detail; onDone: () => void }) {
  const can = useCan();
  const id = props.d.project.id;
  const act = useAction(async () => {
    const { deployment } = await unwrap(api.POST("/api/projects/{id}/deploy", { params: { path: { id } } }));
    props.onDone();
    navigate(`/projects/${id}/deployments/${deployment.id}`);
  });
  if (!can("POST", "/api/projects/{id}/deploy") || props.d.deployAction.kind === "none") return null;
  return (
    <div>
      <button type="button" onClick={() => act.run()} disabled={act.busy}>
        {act.busy ? "Deploying…" : "Deploy"}
      </button>
      <ErrorNote error={act.error} />
      <Curl method="POST" path={`/api/projects/${id}/deploy`} cli={cli("deploy", "--project", id)} />
    </div>
  );
}

export function ProjectDeployments() {
  return <ProjectLayout tab="/deployments">{(d, reload) => <DeploymentList d={d} reloadProject={reload} />}</ProjectLayout>;
}

function DeploymentList(props: { d: Detail; reloadProject: () => Promise<void> }) {
  const id = props.d.project.id;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/deployments", { params: { path: { id } } })), [id]);
  const rollback = useAction(async (dep: Deployment) => {
    const body = { projectId: id, commit: dep.commit };
    const { deployment } = await unwrap(api.POST("/api/repos/{id}/deploy", { params: { path: { id: dep.repoId! } }, body }));
    await props.reloadProject();
    navigate(`/projects/${id}/deployments/${deployment.id}`);
  });
  const promote = useAction(async (dep: Deployment) => {
    await unwrap(api.POST("/api/deployments/{id}/promote", { params: { path: { id: dep.id } } }));
    await props.reloadProject();
    await list.reload();
  });
  const mayRollback = can("POST", "/api/repos/{id}/deploy");
  const mayPromote = can("POST", "/api/deployments/{id}/promote");
  const deps = list.data?.deployments ?? [];
  const preview = deps.find((x) => x.state === "preview");
  const live = deps.find((x) => x.state === "live");
  const rollbackable = (x: Deployment) => !!x.repoId && x.state === "inactive" && !!live && x.commit !== live.commit;
  const candidate = deps.find(rollbackable);
  return (
    <section aria-labelledby="deps-h">
      <div class="row spread">
        <h2 id="deps-h">Deployments</h2>
        <DeployButton d={props.d} onDone={list.reload} />
      </div>
      <ErrorNote error={list.error} />
      <ErrorNote error={rollback.error} />
      <ErrorNote error={promote.error} />
      {!list.data && !list.error && <Loading what="deployments" />}
      {list.data && deps.length === 0 && <p class="muted">No deployments yet. Push a commit to a repo and deploy it (see the README's "Deploy a site").</p>}
      {deps.length > 0 && (
        <table>
          <caption class="visually-hidden">Deployments, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Deployment</th>
              <th scope="col">State</th>
              <th scope="col">Source</th>
              <th scope="col">Own address</th>
              <th scope="col">Started</th>
              <th scope="col">Took</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deps.map((x) => (
              <tr key={x.id}>
                <td>
                  <a href={`/projects/${id}/deployments/${x.id}`}>{x.id}</a>
                  {x.rollback && <span class="muted small"> (rollback)</span>}
                </td>
                <td>
                  <Badge state={x.state} />
                </td>
                <td>{x.repoName ? `${x.repoName} commit ${x.commit}` : x.source}</td>
                <td>
                  {x.previewUrl ? (
                    <a href={x.previewUrl} target="_blank" rel="noopener">
                      {new URL(x.previewUrl).host}
                    </a>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
                <td>
                  <When at={x.createdAt} />
                </td>
                <td>{duration(x.createdAt, x.finishedAt)}</td>
                <td>
                  {mayPromote && x.state === "preview" && (
                    <button type="button" class="small" disabled={promote.busy} onClick={() => promote.run(x)}>
                      Promote to production
                    </button>
                  )}
                  {mayRollback && rollbackable(x) && (
                    <button type="button" class="secondary small" disabled={rollback.busy} onClick={() => rollback.run(x)}>
                      Roll back to commit {x.commit}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {mayPromote && preview && (
        <Curl what="Promote the preview" method="POST" path={`/api/deployments/${preview.id}/promote`} cli={cli("promote", preview.id, "--project", id)} />
      )}
      {mayRollback && candidate?.repoId && (
        <Curl what="Roll back" method="POST" path={`/api/repos/${candidate.repoId}/deploy`} body={{ projectId: id, commit: candidate.commit }} cli={cli("rollback", candidate.commit, "--project", id)} />
      )}
    </section>
  );
}

export function ProjectVariables() {
  return <ProjectLayout tab="/variables">{(d) => <Variables d={d} />}</ProjectLayout>;
}

// Variables: values for developers and above; viewers see which keys the
// live deployment has, never their values.
function Variables(props: { d: Detail }) {
  const id = props.d.project.id;
  const can = useCan();
  if (!can("GET", "/api/projects/{id}/env")) return <ViewerVariables d={props.d} />;
  return <EditableVariables id={id} mayWrite={can("POST", "/api/projects/{id}/env")} />;
}

function ViewerVariables(props: { d: Detail }) {
  const { session } = useSession();
  const dep = props.d.serving.deployment as Partial<Deployment> | null;
  const keys = dep?.envKeys ?? [];
  return (
    <section aria-labelledby="env-h">
      <h2 id="env-h">Environment variables</h2>
      <p class="note">Values are shown to developers and above; you are {session.role === "viewer" ? "a viewer" : `an ${session.role}`}.</p>
      {keys.length > 0 ? (
        <>
          <p>The serving deployment was started with these variables:</p>
          <ul class="plain mono">
            {keys.map((k) => (
              <li key={k}>{k}</li>
            ))}
          </ul>
        </>
      ) : (
        <p class="muted">The serving deployment has no variables.</p>
      )}
    </section>
  );
}

function EditableVariables(props: { id: string; mayWrite: boolean }) {
  const { id } = props;
  const env = useLoad(() => unwrap(api.GET("/api/projects/{id}/env", { params: { path: { id } } })), [id]);
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const add = useAction(async () => {
    await unwrap(api.POST("/api/projects/{id}/env", { params: { path: { id } }, body: { key, value } }));
    setKey("");
    setValue("");
    await env.reload();
  });
  const vars = env.data?.variables ?? [];
  return (
    <section aria-labelledby="env-h">
      <h2 id="env-h">Environment variables</h2>
      <p class="muted small">Sealed at rest; a deployment gets them when it starts (deploy again after a change).</p>
      <ErrorNote error={env.error} />
      {!env.data && !env.error && <Loading what="variables" />}
      {env.data && vars.length === 0 && <p class="muted">No variables yet.</p>}
      {vars.length > 0 && (
        <table>
          <caption class="visually-hidden">Variables</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Value</th>
              <th scope="col">Changed</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {vars.map((v) => (
              <VariableRow key={v.id} project={id} v={v} mayWrite={props.mayWrite} onChange={env.reload} />
            ))}
          </tbody>
        </table>
      )}
      {props.mayWrite && vars.length > 0 && (
        <>
          <Curl what="Change a variable" method="PATCH" path={`/api/projects/${id}/env/${vars[0]!.id}`} body={{ value: "<new value>" }} cli={cli("env", "set", vars[0]!.key, "--project", id)} />
          <Curl what="Delete a variable" method="DELETE" path={`/api/projects/${id}/env/${vars[0]!.id}`} cli={cli("env", "rm", vars[0]!.key, "--project", id)} />
        </>
      )}
      {env.data && Object.keys(env.data.system).length > 0 && (
        <p class="muted small">
          Always set by the platform:{" "}
          {Object.entries(env.data.system)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}
        </p>
      )}
      {props.mayWrite && (
        <form
          class="card"
          aria-labelledby="env-add-h"
          onSubmit={(e) => {
            e.preventDefault();
            add.run();
          }}
        >
          <h3 id="env-add-h">Add or replace a variable</h3>
          <div class="row">
            <Field label="Key" name="key" required pattern="[A-Za-z_][A-Za-z0-9_]*" value={key} onInput={(e) => setKey(e.currentTarget.value)} class="mono" />
            <Field label="Value" name="value" type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} class="mono" />
          </div>
          <ErrorNote error={add.error} />
          <button type="submit" disabled={add.busy}>
            Save variable
          </button>
          <Curl method="POST" path={`/api/projects/${id}/env`} body={{ key, value: value ? "<value>" : "" }} cli={cli("env", "set", key || "KEY", "--project", id)} />
        </form>
      )}
    </section>
  );
}

function VariableRow(props: { project: string; v: Schemas["Variable"]; mayWrite: boolean; onChange: () => Promise<void> }) {
  const { v } = props;
  const [shown, setShown] = useState(false);
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(v.value);
  const [confirm, setConfirm] = useState(false);
  const path = { id: props.project, envId: v.id };
  const save = useAction(async () => {
    await unwrap(api.PATCH("/api/projects/{id}/env/{envId}", { params: { path }, body: { value } }));
    setEditing(false);
    await props.onChange();
  });
  const del = useAction(async () => {
    await unwrap(api.DELETE("/api/projects/{id}/env/{envId}", { params: { path } }));
    await props.onChange();
  });
  return (
    <tr>
      <td class="mono">{v.key}</td>
      <td class="mono">
        {editing ? (
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              save.run();
            }}
          >
            <Field label={`New value of ${v.key}`} value={value} onInput={(e) => setValue(e.currentTarget.value)} autocomplete="off" />
            <button type="submit" class="small" disabled={save.busy}>
              Save
            </button>
            <button type="button" class="secondary small" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <ErrorNote error={save.error} />
          </form>
        ) : shown ? (
          <span class="value">{v.value}</span>
        ) : (
          <span aria-label="hidden value">••••••••</span>
        )}
      </td>
      <td>
        <When at={v.updatedAt} />
      </td>
      <td class="actions">
        {!editing && (
          <button type="button" class="secondary small" onClick={() => setShown(!shown)} aria-pressed={shown}>
            {shown ? "Hide" : "Show"}
            <span class="visually-hidden"> value of {v.key}</span>
          </button>
        )}
        {props.mayWrite && !editing && (
          <button type="button" class="secondary small" onClick={() => setEditing(true)}>
            Edit<span class="visually-hidden"> {v.key}</span>
          </button>
        )}
        {props.mayWrite &&
          (confirm ? (
            <>
              <button type="button" class="danger small" disabled={del.busy} onClick={() => del.run()}>
                Delete {v.key}
              </button>
              <button type="button" class="secondary small" onClick={() => setConfirm(false)}>
                Keep
              </button>
            </>
          ) : (
            <button type="button" class="secondary small" onClick={() => setConfirm(true)}>
              Delete<span class="visually-hidden"> {v.key}</span>
            </button>
          ))}
        <ErrorNote error={del.error} />
      </td>
    </tr>
  );
}

export function ProjectDatabases() {
  return <ProjectLayout tab="/databases">{(d) => <ProjectDatabaseList d={d} />}</ProjectLayout>;
}

function ProjectDatabaseList(props: { d: Detail }) {
  const id = props.d.project.id;
  const can = useCan();
  const loc = useLocation();
  const cursor = loc.query.get("cursor") ?? "";
  const list = useLoad(
    () => unwrap(api.GET("/api/projects/{id}/databases", { params: { path: { id }, query: { limit: 50, ...(cursor ? { cursor } : {}) } as never } })),
    [id, cursor],
  );
  const [name, setName] = useState("");
  const create = useAction(async () => {
    const { database } = await unwrap(api.POST("/api/projects/{id}/databases", { params: { path: { id } }, body: { name } }));
    navigate(`/databases/${database.id}`);
  });
  const dbs = list.data?.databases ?? [];
  return (
    <section aria-labelledby="dbs-h">
      <h2 id="dbs-h">Databases</h2>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="databases" />}
      {list.data && dbs.length === 0 && <p class="muted">No databases yet. Each is its own SQLite file.</p>}
      {dbs.length > 0 && (
        <table>
          <caption class="visually-hidden">The project's databases, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col">Size</th>
              <th scope="col">Made</th>
            </tr>
          </thead>
          <tbody>
            {dbs.map((db) => (
              <tr key={db.id}>
                <td>
                  <a href={`/databases/${db.id}`}>{db.name}</a> <span class="muted small mono">{db.id}</span>
                </td>
                <td>
                  <Badge state={db.status} />
                </td>
                <td>{bytes(db.sizeBytes)}</td>
                <td>
                  <When at={db.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Database pages">
        {cursor && (
          <button type="button" class="secondary" onClick={() => history.back()}>
            ← Back
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => navigate(`/projects/${id}/databases?cursor=${encodeURIComponent(list.data!.nextCursor!)}`)}>
            Next →
          </button>
        )}
      </nav>
      <Curl what="List the databases" method="GET" path={`/api/projects/${id}/databases`} />
      {can("POST", "/api/projects/{id}/databases") && (
        <form
          class="card narrow"
          aria-labelledby="db-new-h"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <h3 id="db-new-h">Create a database</h3>
          <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <ErrorNote error={create.error} />
          <button type="submit" disabled={create.busy}>
            Create database
          </button>
          <Curl method="POST" path={`/api/projects/${id}/databases`} body={{ name }} />
        </form>
      )}
    </section>
  );
}

export function ProjectSettings() {
  return <ProjectLayout tab="/settings">{(d) => <Settings d={d} />}</ProjectLayout>;
}

type Blocker = { kind: string; message: string; action: string };

function Settings(props: { d: Detail }) {
  const p = props.d.project;
  const can = useCan();
  const loc = useLocation();
  return (
    <>
      <section class="card" aria-labelledby="about-h">
        <h2 id="about-h">About</h2>
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">{p.id}</dd>
          <dt>Slug</dt>
          <dd class="mono">{p.slug}</dd>
          <dt>Address</dt>
          <dd>{p.url}</dd>
          <dt>Status</dt>
          <dd>
            <Badge state={p.status} />
            {p.teardownError && <span class="error"> {p.teardownError}</span>}
          </dd>
          <dt>Created</dt>
          <dd>
            <When at={p.createdAt} />
          </dd>
        </dl>
      </section>
      {can("DELETE", "/api/projects/{id}") ? (
        <DeleteProject p={p} key={loc.path} />
      ) : (
        <p class="note">Deleting a project needs an admin.</p>
      )}
    </>
  );
}

function DeleteProject(props: { p: Schemas["Project"] }) {
  const { p } = props;
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState("");
  const [blockers, setBlockers] = useState<Blocker[]>([]);
  const act = useAction(async () => {
    setBlockers([]);
    try {
      await unwrap(api.DELETE("/api/projects/{id}", { params: { path: { id: p.id } } }));
      navigate("/");
    } catch (e) {
      if (e instanceof ApiError && e.code === "deletion_blocked") {
        const b = (e.body as { error?: { blockers?: Blocker[] } })?.error?.blockers ?? [];
        setBlockers(b);
      }
      throw e;
    }
  });
  return (
    <section class="card danger-zone" aria-labelledby="delete-h">
      <h2 id="delete-h">Delete this project</h2>
      <p>Its site, functions, files, databases, vector collections and media go for good.</p>
      {!open ? (
        <button type="button" class="danger" onClick={() => setOpen(true)}>
          Delete project
        </button>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            act.run();
          }}
        >
          <Field label={`Type ${p.slug} to confirm`} name="confirm" autocomplete="off" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          <div class="row">
            <button type="submit" class="danger" disabled={typed !== p.slug || act.busy}>
              Delete {p.name} for good
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
          <Curl method="DELETE" path={`/api/projects/${p.id}`} />
        </form>
      )}
    </section>
  );
}

