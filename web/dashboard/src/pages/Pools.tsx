import { useState } from "preact/hooks";
import { api, query, unwrap, type Schemas } from "../api/client";
import { navigate, useLocation, useParams } from "../router";
import { useCan } from "../session";
import { Badge, Curl, ErrorNote, Field, Loading, Page, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";

// ProjectPools: the project's sign-in pools (its apps' users); create one.
export function ProjectPools() {
  return <ProjectLayout tab="/auth-pools">{(d) => <PoolList project={d.project.id} />}</ProjectLayout>;
}

function PoolList(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/auth-pools", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const create = useAction(async () => {
    const { pool } = await unwrap(api.POST("/api/projects/{id}/auth-pools", { params: { path: { id } }, body: { name } }));
    navigate(`/auth-pools/${pool.id}`);
  });
  const pools = list.data?.pools ?? [];
  return (
    <section aria-labelledby="pools-h">
      <h2 id="pools-h">Sign-in pools</h2>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="pools" />}
      {list.data && pools.length === 0 && <p class="muted">No pools: a pool gives your app sign-up, sign-in and tokens for its users.</p>}
      {pools.length > 0 && (
        <table>
          <caption class="visually-hidden">Sign-in pools</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Users</th>
              <th scope="col">Made</th>
            </tr>
          </thead>
          <tbody>
            {pools.map((p) => (
              <tr key={p.id}>
                <td>
                  <a href={`/auth-pools/${p.id}`}>{p.name}</a>
                </td>
                <td>
                  {p.userCount} of {p.userLimit}
                </td>
                <td>
                  <When at={p.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can("POST", "/api/projects/{id}/auth-pools") && (
        <form
          class="row"
          aria-label="Create a pool"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <Field label="Pool name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" disabled={create.busy}>
            Create pool
          </button>
        </form>
      )}
      <ErrorNote error={create.error} />
    </section>
  );
}

// Pool: its settings and endpoints, and its users with search and paging;
// disable, enable, unlock or delete a user.
export function Pool() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const p = useLoad(() => unwrap(api.GET("/api/auth-pools/{id}", { params: { path: { id } } })), [id]);
  const pool = p.data?.pool;
  return (
    <Page title={pool ? `Sign-in pool ${pool.name}` : "Sign-in pool"}>
      <ErrorNote error={p.error} />
      {!pool && !p.error && <Loading what="the pool" />}
      {pool && (
        <>
          <p>
            <a href={`/projects/${pool.projectId}/auth-pools`}>← The project's pools</a>
          </p>
          <div class="grid-2">
            {can("GET", "/api/auth-pools/{id}/users") ? <Users pool={pool} /> : <p class="note">The users list needs a developer or above.</p>}
            <dl class="facts card">
              <dt>Id</dt>
              <dd class="mono">{pool.id}</dd>
              <dt>Users</dt>
              <dd>
                {pool.userCount} of {pool.userLimit}
              </dd>
              <dt>Issuer</dt>
              <dd class="mono small break">{pool.issuer}</dd>
              <dt>Endpoints</dt>
              <dd class="mono small break">{pool.endpoints.base}</dd>
              <dt>Keys</dt>
              <dd class="mono small break">{pool.endpoints.jwks}</dd>
              <dt>Verified e-mail</dt>
              <dd>{pool.settings.requireEmailVerification ? "required" : "not required"}</dd>
              <dt>Lockout</dt>
              <dd>
                {pool.settings.lockoutThreshold} failures lock for {pool.settings.lockoutMinutes} min
              </dd>
              <dt>Origins</dt>
              <dd class="small">{pool.effectiveOrigins.join(", ") || "none"}</dd>
            </dl>
          </div>
        </>
      )}
    </Page>
  );
}

function Users(props: { pool: Schemas["Pool"] }) {
  const loc = useLocation();
  const email = loc.query.get("email") ?? "";
  const cursor = loc.query.get("cursor") ?? "";
  const [draft, setDraft] = useState(email);
  const list = useLoad(
    () => unwrap(api.GET("/api/auth-pools/{id}/users", { params: { path: { id: props.pool.id }, query: query({ email, cursor, limit: 25 }) } })),
    [props.pool.id, email, cursor],
  );
  const go = (q: Record<string, string>) => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) u.set(k, v);
    navigate(`${loc.path}${u.toString() ? `?${u}` : ""}`);
  };
  const users = list.data?.users ?? [];
  return (
    <section aria-labelledby="users-h">
      <h2 id="users-h">Users</h2>
      <form
        class="row"
        aria-label="Find users"
        onSubmit={(e) => {
          e.preventDefault();
          go({ email: draft.trim() });
        }}
      >
        <Field label="E-mail contains" name="email" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
        <button type="submit" class="secondary">
          Find
        </button>
      </form>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="users" />}
      {list.data && users.length === 0 && <p class="muted">No users{email ? ` matching ${email}` : ""}.</p>}
      {users.length > 0 && (
        <table>
          <caption class="visually-hidden">Users, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">State</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <UserRow key={u.id} pool={props.pool.id} u={u} onChange={list.reload} />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="User pages">
        {cursor && (
          <button type="button" class="secondary" onClick={() => history.back()}>
            ← Back
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => go({ email, cursor: list.data!.nextCursor! })}>
            Next →
          </button>
        )}
      </nav>
      <Curl method="GET" path={`/api/auth-pools/${props.pool.id}/users?limit=25`} />
    </section>
  );
}

function UserRow(props: { pool: string; u: Schemas["User"]; onChange: () => Promise<void> }) {
  const { u } = props;
  const can = useCan();
  const [confirm, setConfirm] = useState(false);
  const act = useAction(async (what: "disable" | "enable" | "unlock" | "delete") => {
    const path = { id: props.pool, userId: u.id };
    if (what === "delete") await unwrap(api.DELETE("/api/auth-pools/{id}/users/{userId}", { params: { path } }));
    else await unwrap(api.PATCH("/api/auth-pools/{id}/users/{userId}", { params: { path }, body: what === "unlock" ? { unlock: true } : { disabled: what === "disable" } }));
    setConfirm(false);
    await props.onChange();
  });
  const locked = u.lockedUntil && new Date(u.lockedUntil) > new Date();
  return (
    <tr>
      <td>
        {u.email} {u.emailVerified ? "" : <span class="muted small">(not verified)</span>}
      </td>
      <td>
        <Badge state={u.disabled ? "disabled" : locked ? "locked" : "active"} />
      </td>
      <td>
        <When at={u.lastSignInAt} />
      </td>
      <td class="actions">
        {can("PATCH", "/api/auth-pools/{id}/users/{userId}") && (
          <>
            <button type="button" class="secondary small" onClick={() => act.run(u.disabled ? "enable" : "disable")} disabled={act.busy}>
              {u.disabled ? "Enable" : "Disable"}
              <span class="visually-hidden"> {u.email}</span>
            </button>
            {locked && (
              <button type="button" class="secondary small" onClick={() => act.run("unlock")} disabled={act.busy}>
                Unlock
              </button>
            )}
            {confirm ? (
              <button type="button" class="danger small" onClick={() => act.run("delete")} disabled={act.busy}>
                Delete {u.email}
              </button>
            ) : (
              <button type="button" class="secondary small" onClick={() => setConfirm(true)}>
                Delete<span class="visually-hidden"> {u.email}</span>
              </button>
            )}
          </>
        )}
        <ErrorNote error={act.error} />
      </td>
    </tr>
  );
}
