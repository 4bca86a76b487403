import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { useCan, useSession } from "../session";
import { CopyButton, Curl, ErrorNote, Field, Loading, Page, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

// Keys: API keys (your own; every key for admins), created with the secret
// shown once, and revoked.
export function Keys() {
  const list = useLoad(() => unwrap(api.GET("/api/keys")), []);
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  const can = useCan();
  const names = new Map(projects.data?.projects.map((p) => [p.id, p.name]));
  const keys = list.data?.keys ?? [];
  return (
    <Page title="API keys">
      {can("POST", "/api/keys") && <CreateKey projects={projects.data?.projects ?? []} onDone={list.reload} />}
      <section aria-labelledby="keys-h">
        <h2 id="keys-h">Keys</h2>
        <ErrorNote error={list.error} />
        {!list.data && !list.error && <Loading what="keys" />}
        {list.data && keys.length === 0 && <p class="muted">No keys.</p>}
        {keys.length > 0 && (
          <table>
            <caption class="visually-hidden">API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col">Access</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <KeyRow key={k.id} k={k} project={k.projectId ? (names.get(k.projectId) ?? k.projectId) : ""} onChange={list.reload} />
              ))}
            </tbody>
          </table>
        )}
        {keys.length > 0 && <Curl what="Revoke a key" method="DELETE" path={`/api/keys/${keys[0]!.id}`} />}
      </section>
    </Page>
  );
}

function KeyRow(props: { k: Schemas["Key"]; project: string; onChange: () => Promise<void> }) {
  const { k } = props;
  const { session } = useSession();
  const can = useCan();
  const [confirm, setConfirm] = useState(false);
  const revoke = useAction(async () => {
    await unwrap(api.DELETE("/api/keys/{id}", { params: { path: { id: k.id } } }));
    await props.onChange();
  });
  // Your own keys; an admin's list has everyone's.
  const mayRevoke = !k.revokedAt && can("DELETE", "/api/keys/{id}") && (k.memberId === session.member.id || can("POST", "/api/members"));
  return (
    <tr>
      <td>{k.name}</td>
      <td class="mono">{k.prefix}</td>
      <td>
        {k.access.replace(/_/g, " ")}
        {props.project && <span class="muted"> · project {props.project}</span>}
      </td>
      <td>
        <When at={k.lastUsedAt} />
      </td>
      <td>{k.revokedAt ? <span>revoked <When at={k.revokedAt} /></span> : k.expiresAt ? <When at={k.expiresAt} /> : <span class="muted">never</span>}</td>
      <td class="actions">
        {mayRevoke &&
          (confirm ? (
            <>
              <button type="button" class="danger small" onClick={() => revoke.run()} disabled={revoke.busy}>
                Revoke {k.name}
              </button>
              <button type="button" class="secondary small" onClick={() => setConfirm(false)}>
                Keep
              </button>
            </>
          ) : (
            <button type="button" class="secondary small" onClick={() => setConfirm(true)}>
              Revoke<span class="visually-hidden"> {k.name}</span>
            </button>
          ))}
        <ErrorNote error={revoke.error} />
      </td>
    </tr>
  );
}

function CreateKey(props: { projects: Schemas["Project"][]; onDone: () => Promise<void> }) {
  const [name, setName] = useState("");
  const [access, setAccess] = useState("full");
  const [project, setProject] = useState("");
  const [days, setDays] = useState("");
  const [created, setCreated] = useState<Schemas["CreatedKey"]>();
  const body = () => ({ name, access, ...(project ? { projectId: project } : {}), ...(days ? { expiresInDays: Number(days) } : {}) });
  const act = useAction(async () => {
    setCreated(undefined);
    setCreated(await unwrap(api.POST("/api/keys", { body: body() })));
    setName("");
    await props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="newkey-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="newkey-h">Create a key</h2>
      <div class="row">
        <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <Select label="Access" name="access" options={[["full", "Full access"], ["read_only", "Read only"]]} value={access} onChange={(e) => setAccess(e.currentTarget.value)} />
        <Select
          label="Project"
          name="project"
          options={[["", "Whole workspace"], ...props.projects.map((p): [string, string] => [p.id, p.name])]}
          value={project}
          onChange={(e) => setProject(e.currentTarget.value)}
        />
        <Field label="Expires in days (optional)" name="days" type="number" min={1} value={days} onInput={(e) => setDays(e.currentTarget.value)} />
      </div>
      <p class="muted small">A key acts with your role, never more; a project key reaches only that project.</p>
      <ErrorNote error={act.error} />
      <button type="submit" disabled={act.busy}>
        Create key
      </button>
      {created && (
        <div class="secret" role="status">
          <p>
            The key <strong>{created.key.name}</strong>, shown only now: store it somewhere safe.
          </p>
          <p class="mono break" id="new-secret">
            {created.secret}
          </p>
          <CopyButton text={created.secret} label="Copy key" />
        </div>
      )}
      <Curl method="POST" path="/api/keys" body={body()} />
    </form>
  );
}
