import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { useCan } from "../session";
import { Badge, CopyButton, Curl, ErrorNote, Field, Loading, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";

const redirects: [string, string][] = [
  ["", "The name alone"],
  ["www", "The apex redirects to www"],
  ["apex", "www redirects to the apex"],
];

// ProjectDomains: the project's custom domains; add one (the records to
// publish), look its records up now, change an apex's www redirect, remove.
export function ProjectDomains() {
  return <ProjectLayout tab="/domains">{(d) => <Domains project={d.project.id} />}</ProjectLayout>;
}

function Domains(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/domains", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const [redirect, setRedirect] = useState("");
  const body = () => ({ name, ...(redirect ? { redirect } : {}) });
  const add = useAction(async () => {
    await unwrap(api.POST("/api/projects/{id}/domains", { params: { path: { id } }, body: body() }));
    setName("");
    await list.reload();
  });
  const doms = list.data?.domains ?? [];
  return (
    <>
      <section aria-labelledby="domains-h">
        <h2 id="domains-h">Custom domains</h2>
        <ErrorNote error={list.error} />
        {!list.data && !list.error && <Loading what="domains" />}
        {list.data && doms.length === 0 && <p class="muted">None yet: the project answers at its platform address only.</p>}
        {doms.map((d) => (
          <DomainCard key={d.id} d={d} onChange={list.reload} />
        ))}
      </section>
      {can("POST", "/api/projects/{id}/domains") && (
        <form
          class="card"
          aria-labelledby="dom-add-h"
          onSubmit={(e) => {
            e.preventDefault();
            add.run();
          }}
        >
          <h2 id="dom-add-h">Add a domain</h2>
          <Field label="Domain" name="domain" required placeholder="shop.example.com" value={name} onInput={(e) => setName(e.currentTarget.value)} hint="A subdomain, or an apex such as example.com." />
          <Select label="www (apex domains only)" name="redirect" options={redirects} value={redirect} onChange={(e) => setRedirect(e.currentTarget.value)} />
          <ErrorNote error={add.error} />
          <button type="submit" disabled={add.busy}>
            Add domain
          </button>
          <Curl method="POST" path={`/api/projects/${id}/domains`} body={body()} />
        </form>
      )}
    </>
  );
}

function DomainCard(props: { d: Schemas["CustomDomain"]; onChange: () => Promise<void> }) {
  const can = useCan();
  const [d, setD] = useState(props.d);
  const [confirm, setConfirm] = useState(false);
  const mayWrite = can("POST", "/api/domains/{id}/verify");
  const verify = useAction(async () => {
    const { domain } = await unwrap(api.POST("/api/domains/{id}/verify", { params: { path: { id: d.id } } }));
    setD(domain);
  });
  const patch = useAction(async (r: string) => {
    const { domain } = await unwrap(api.PATCH("/api/domains/{id}", { params: { path: { id: d.id } }, body: { redirect: r || null } }));
    setD(domain);
  });
  const remove = useAction(async () => {
    await unwrap(api.DELETE("/api/domains/{id}", { params: { path: { id: d.id } } }));
    await props.onChange();
  });
  const hid = `dom-${d.id}-h`;
  return (
    <article class="card" aria-labelledby={hid}>
      <div class="row spread">
        <h3 id={hid}>{d.name}</h3>
        <Badge state={d.state} />
      </div>
      <p class="small">
        {d.verifiedAt ? (
          <>
            verified <When at={d.verifiedAt} />
          </>
        ) : d.checkedAt ? (
          <>
            checked <When at={d.checkedAt} />
          </>
        ) : (
          "not checked yet"
        )}
        {d.verifiedAt && d.hosts.length > 0 && <> · answers at {d.hosts.join(", ")}</>}
      </p>
      {d.problem && (
        <p class="note" role="status">
          {d.problem}
        </p>
      )}
      <table>
        <caption>Records to publish at your DNS provider</caption>
        <thead>
          <tr>
            <th scope="col">Type</th>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {d.records.map((r) => (
            <tr key={r.purpose + r.type + r.name}>
              <td>{r.type}</td>
              <td class="mono small break">
                {r.name} <CopyButton text={r.name} label="Copy" />
              </td>
              <td class="mono small break">
                {r.value} <CopyButton text={r.value} label="Copy" />
                {r.note && <div class="muted">{r.note}</div>}
              </td>
              <td>
                <Badge state={r.status} />
                {r.found && r.found.length > 0 && r.status !== "ok" && <div class="small">found: {r.found.join(", ")}</div>}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {mayWrite && (
        <div class="row">
          <button type="button" onClick={() => verify.run()} disabled={verify.busy}>
            {verify.busy ? "Looking up…" : `Verify ${d.name} now`}
          </button>
          {d.apex && (
            <form class="row" aria-label={`www redirect of ${d.name}`} onSubmit={(e) => e.preventDefault()}>
              <Select label="www" name="www" options={redirects} value={d.redirect ?? ""} disabled={patch.busy} onChange={(e) => patch.run(e.currentTarget.value)} />
            </form>
          )}
          {!confirm ? (
            <button type="button" class="secondary" onClick={() => setConfirm(true)}>
              Remove
            </button>
          ) : (
            <button type="button" class="danger" onClick={() => remove.run()} disabled={remove.busy}>
              Remove {d.name}
            </button>
          )}
        </div>
      )}
      <ErrorNote error={verify.error ?? patch.error ?? remove.error} />
      {mayWrite && <Curl what="Verify" method="POST" path={`/api/domains/${d.id}/verify`} />}
      {mayWrite && d.apex && <Curl what="Change the www redirect" method="PATCH" path={`/api/domains/${d.id}`} body={{ redirect: d.redirect ?? null }} />}
      {mayWrite && <Curl what="Remove" method="DELETE" path={`/api/domains/${d.id}`} />}
    </article>
  );
}
