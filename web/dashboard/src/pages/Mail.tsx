import { useState } from "preact/hooks";
import { api, query, unwrap } from "../api/client";
import { navigate, useLocation, useParams } from "../router";
import { useCan } from "../session";
import { Badge, CopyButton, Curl, ErrorNote, Field, Loading, Page, Select, TextArea, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";

// ProjectMail: sending domains (add one) and the project's e-mails with a
// state filter and paging; send one.
export function ProjectMail() {
  return <ProjectLayout tab="/mail">{(d) => <Mail project={d.project.id} />}</ProjectLayout>;
}

function Mail(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const doms = useLoad(() => unwrap(api.GET("/api/projects/{id}/mail/domains", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const add = useAction(async () => {
    const { domain } = await unwrap(api.POST("/api/projects/{id}/mail/domains", { params: { path: { id } }, body: { name } }));
    navigate(`/mail/domains/${domain.id}`);
  });
  return (
    <>
      <div class="grid-2">
        <section aria-labelledby="dom-h">
          <h2 id="dom-h">Sending domains</h2>
          <ErrorNote error={doms.error} />
          {doms.data && doms.data.domains.length === 0 && <p class="muted">None: mail goes from the platform's address.</p>}
          <ul class="plain">
            {doms.data?.domains.map((d) => (
              <li key={d.id}>
                <a href={`/mail/domains/${d.id}`}>{d.name}</a> <Badge state={d.state} />
              </li>
            ))}
          </ul>
          {can("POST", "/api/projects/{id}/mail/domains") && (
            <form
              class="row"
              aria-label="Add a sending domain"
              onSubmit={(e) => {
                e.preventDefault();
                add.run();
              }}
            >
              <Field label="Domain" name="domain" required placeholder="mail.example.com" value={name} onInput={(e) => setName(e.currentTarget.value)} />
              <button type="submit" class="secondary" disabled={add.busy}>
                Add domain
              </button>
            </form>
          )}
          <ErrorNote error={add.error} />
        </section>
        {can("POST", "/api/projects/{id}/emails") && <Send project={id} />}
      </div>
      <Messages project={id} />
    </>
  );
}

function Send(props: { project: string }) {
  const [to, setTo] = useState("");
  const [subject, setSubject] = useState("");
  const [text, setText] = useState("");
  const [sent, setSent] = useState("");
  const body = () => ({ to: to.split(/[\s,]+/).filter(Boolean), subject, text });
  const act = useAction(async () => {
    const { email } = await unwrap(api.POST("/api/projects/{id}/emails", { params: { path: { id: props.project } }, body: body() }));
    setSent(`Queued ${email.id}.`);
    navigate(`/projects/${props.project}/mail`, { replace: true });
  });
  return (
    <form
      class="card"
      aria-labelledby="send-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="send-h">Send an e-mail</h2>
      <Field label="To" name="to" required value={to} onInput={(e) => setTo(e.currentTarget.value)} hint="Addresses separated by commas." />
      <Field label="Subject" name="subject" required value={subject} onInput={(e) => setSubject(e.currentTarget.value)} />
      <TextArea label="Text" name="text" rows={4} required value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <ErrorNote error={act.error} />
      {sent && <p role="status">{sent}</p>}
      <button type="submit" disabled={act.busy}>
        Send
      </button>
      <Curl method="POST" path={`/api/projects/${props.project}/emails`} body={body()} />
    </form>
  );
}

function Messages(props: { project: string }) {
  const loc = useLocation();
  const state = loc.query.get("state") ?? "";
  const cursor = loc.query.get("cursor") ?? "";
  const list = useLoad(
    () => unwrap(api.GET("/api/projects/{id}/emails", { params: { path: { id: props.project }, query: query({ state, cursor, limit: 25 }) } })),
    [props.project, state, cursor, loc.query.toString()],
  );
  const go = (q: Record<string, string>) => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) u.set(k, v);
    navigate(`${loc.path}${u.toString() ? `?${u}` : ""}`);
  };
  const rows = list.data?.emails ?? [];
  return (
    <section aria-labelledby="msgs-h">
      <div class="row spread">
        <h2 id="msgs-h">Messages</h2>
        <form class="row" aria-label="Filter messages" onSubmit={(e) => e.preventDefault()}>
          <Select label="State" name="state" options={[["", "Any state"], ["queued", "queued"], ["sent", "sent"], ["failed", "failed"]]} value={state} onChange={(e) => go({ state: e.currentTarget.value })} />
        </form>
      </div>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="messages" />}
      {list.data && rows.length === 0 && <p class="muted">No messages.</p>}
      {rows.length > 0 && (
        <table>
          <caption class="visually-hidden">E-mails, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Subject</th>
              <th scope="col">To</th>
              <th scope="col">State</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((m) => (
              <tr key={m.id}>
                <td>{m.subject}</td>
                <td class="small">{m.to.join(", ")}</td>
                <td>
                  <Badge state={m.state} />
                  {(m.failureReason || m.lastError) && <div class="error small">{m.failureReason ?? m.lastError}</div>}
                </td>
                <td>
                  <When at={m.sentAt ?? m.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Message pages">
        {cursor && (
          <button type="button" class="secondary" onClick={() => history.back()}>
            ← Newer
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => go({ state, cursor: list.data!.nextCursor! })}>
            Older →
          </button>
        )}
      </nav>
    </section>
  );
}

// MailDomain: the records to publish, their states, Verify now and remove.
export function MailDomain() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const d = useLoad(() => unwrap(api.GET("/api/mail/domains/{id}", { params: { path: { id } } })), [id]);
  const verify = useAction(async () => {
    await unwrap(api.POST("/api/mail/domains/{id}/verify", { params: { path: { id } } }));
    await d.reload();
  });
  const remove = useAction(async (project: string) => {
    await unwrap(api.DELETE("/api/mail/domains/{id}", { params: { path: { id } } }));
    navigate(`/projects/${project}/mail`);
  });
  const dom = d.data?.domain;
  return (
    <Page title={dom ? `Domain ${dom.name}` : "Sending domain"}>
      <ErrorNote error={d.error} />
      {!dom && !d.error && <Loading what="the domain" />}
      {dom && (
        <>
          <p>
            <a href={`/projects/${dom.projectId}/mail`}>← The project's mail</a>
          </p>
          <p>
            <Badge state={dom.state} /> {dom.verifiedAt ? <>verified <When at={dom.verifiedAt} /></> : dom.checkedAt ? <>checked <When at={dom.checkedAt} /></> : "not checked yet"}
          </p>
          {dom.problem && <p class="note">{dom.problem}</p>}
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
              {dom.records.map((r) => (
                <tr key={r.purpose + r.name}>
                  <td>{r.type}</td>
                  <td class="mono small break">{r.name}</td>
                  <td class="mono small break">
                    {r.value} <CopyButton text={r.value} label="Copy" />
                    {r.note && <div class="muted">{r.note}</div>}
                  </td>
                  <td>
                    <Badge state={r.status} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {can("POST", "/api/mail/domains/{id}/verify") && (
            <div class="row">
              <button type="button" onClick={() => verify.run()} disabled={verify.busy}>
                Verify now
              </button>
              <button type="button" class="danger" onClick={() => remove.run(dom.projectId)} disabled={remove.busy}>
                Remove domain
              </button>
            </div>
          )}
          <ErrorNote error={verify.error ?? remove.error} />
          <Curl method="POST" path={`/api/mail/domains/${id}/verify`} />
        </>
      )}
    </Page>
  );
}
