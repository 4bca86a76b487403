import { api, query, unwrap } from "../api/client";
import { navigate, useLocation } from "../router";
import { useSession } from "../session";
import { Curl, ErrorNote, Field, Loading, Page, Select, When } from "../components/ui";
import { useLoad } from "../components/load";
import { useState } from "preact/hooks";

const pageSizes: [string, string][] = [
  ["25", "25 a page"],
  ["50", "50 a page"],
  ["100", "100 a page"],
  ["200", "200 a page"],
];

// Audit: the workspace's audit log (admins), newest first, filtered by
// action and paged with the API's cursor; the URL keeps the filter and
// the page, so a page can be linked and the back button goes back a page.
export function Audit() {
  const { session } = useSession();
  const loc = useLocation();
  const action = loc.query.get("action") ?? "";
  const before = loc.query.get("before") ?? "";
  const limit = loc.query.get("limit") ?? "50";
  const [draft, setDraft] = useState(action);
  const ws = session.workspace.id;
  const list = useLoad(
    () => unwrap(api.GET("/api/orgs/{id}/audit-logs", { params: { path: { id: ws }, query: query({ action, before, limit }) } })),
    [ws, action, before, limit],
  );
  const go = (q: Record<string, string>) => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) u.set(k, v);
    navigate(`/audit${u.toString() ? `?${u}` : ""}`);
  };
  const entries = list.data?.entries ?? [];
  return (
    <Page title="Audit log">
      <form
        class="row"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          go({ action: draft.trim(), limit });
        }}
      >
        <Field label="Action" name="action" value={draft} placeholder="e.g. project.create" onInput={(e) => setDraft(e.currentTarget.value)} hint="The exact action name, as in the table." />
        <Select label="Rows" name="limit" options={pageSizes} value={limit} onChange={(e) => go({ action, limit: e.currentTarget.value })} />
        <button type="submit">Filter</button>
        {action && (
          <button type="button" class="secondary" onClick={() => go({ limit })}>
            Clear
          </button>
        )}
      </form>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="the audit log" />}
      {list.data && entries.length === 0 && <p class="muted">No rows{action ? ` with action ${action}` : ""}.</p>}
      {entries.length > 0 && (
        <table>
          <caption class="visually-hidden">Audit rows, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">What</th>
              <th scope="col">Who</th>
              <th scope="col">Target</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id}>
                <td>
                  <When at={e.at} />
                </td>
                <td>
                  <a href={`/audit?action=${encodeURIComponent(e.action)}`} class="mono">
                    {e.action}
                  </a>
                  <div class="muted small">{e.category}</div>
                </td>
                <td>{e.summary}</td>
                <td class="small">
                  {e.actor.kind}
                  {e.actor.keyPrefix && <span class="mono"> {e.actor.keyPrefix}</span>}
                  {e.actor.via && <span class="muted"> via {e.actor.via}</span>}
                </td>
                <td class="small">
                  {e.projectId ? <a href={`/projects/${e.projectId}`}>{e.targetId ?? e.projectId}</a> : <span class="mono">{e.targetId ?? ""}</span>}
                  {e.targetType && <div class="muted">{e.targetType}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        {before && (
          <button type="button" class="secondary" onClick={() => history.back()}>
            ← Newer
          </button>
        )}
        {list.data?.nextCursor && (
          <button type="button" class="secondary" onClick={() => go({ action, limit, before: list.data!.nextCursor! })}>
            Older →
          </button>
        )}
      </nav>
      <Curl method="GET" path={`/api/orgs/${ws}/audit-logs?limit=${limit}${action ? `&action=${encodeURIComponent(action)}` : ""}`} />
    </Page>
  );
}
