import { useState } from "preact/hooks";
import { api, query, unwrap, type Schemas } from "../api/client";
import { navigate, useLocation, useParams } from "../router";
import { useCan } from "../session";
import { bytes, Curl, ErrorNote, Field, Loading, Page, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

// Repos: the workspace's repos with their commit counts; create one.
export function Repos() {
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/repos")), []);
  const [name, setName] = useState("");
  const create = useAction(async () => {
    const { repo } = await unwrap(api.POST("/api/repos", { body: { name } }));
    navigate(`/repos/${repo.id}`);
  });
  const repos = list.data?.repos ?? [];
  return (
    <Page title="Repos">
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="repos" />}
      {list.data && repos.length === 0 && <p class="muted">No repos yet: push one with the CLI, or create an empty one here.</p>}
      {repos.length > 0 && (
        <table>
          <caption class="visually-hidden">Repos</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Commits</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {repos.map((r) => (
              <tr key={r.id}>
                <td>
                  <a href={`/repos/${r.id}`}>{r.name}</a>
                  {r.description && <div class="muted small">{r.description}</div>}
                </td>
                <td>{r.commits}</td>
                <td>
                  <When at={r.updatedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can("POST", "/api/repos") && (
        <form
          class="card narrow"
          aria-labelledby="repo-new-h"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <h2 id="repo-new-h">Create a repo</h2>
          <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <ErrorNote error={create.error} />
          <button type="submit" disabled={create.busy}>
            Create repo
          </button>
          <Curl method="POST" path="/api/repos" body={{ name }} />
        </form>
      )}
    </Page>
  );
}

function RepoTabs(props: { id: string; tab: "commits" | "files" }) {
  return (
    <nav aria-label="Repo" class="tabs">
      <ul>
        <li>
          <a href={`/repos/${props.id}`} aria-current={props.tab === "commits" ? "page" : undefined}>
            Commits
          </a>
        </li>
        <li>
          <a href={`/repos/${props.id}/files`} aria-current={props.tab === "files" ? "page" : undefined}>
            Files
          </a>
        </li>
      </ul>
    </nav>
  );
}

// Repo: its commits, newest first, each with Deploy to a project.
export function Repo() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const detail = useLoad(() => unwrap(api.GET("/api/repos/{id}", { params: { path: { id } } })), [id]);
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  const [project, setProject] = useState("");
  const mayDeploy = can("POST", "/api/repos/{id}/deploy");
  const d = detail.data;
  const commits = [...(d?.commits ?? [])].sort((a, b) => b.commit - a.commit);
  const target = project || projects.data?.projects[0]?.id || "";
  return (
    <Page title={d ? `Repo ${d.repo.name}` : "Repo"}>
      <p>
        <a href="/repos">← All repos</a>
      </p>
      <RepoTabs id={id} tab="commits" />
      <ErrorNote error={detail.error} />
      {!d && !detail.error && <Loading what="the repo" />}
      {d && (
        <>
          {mayDeploy && (projects.data?.projects.length ?? 0) > 0 && (
            <form class="row" aria-label="Where to deploy" onSubmit={(e) => e.preventDefault()}>
              <Select
                label="Deploy to project"
                name="project"
                options={(projects.data?.projects ?? []).map((p): [string, string] => [p.id, p.name])}
                value={target}
                onChange={(e) => setProject(e.currentTarget.value)}
              />
            </form>
          )}
          {commits.length === 0 ? (
            <p class="muted">No commits yet.</p>
          ) : (
            <table>
              <caption class="visually-hidden">Commits, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Commit</th>
                  <th scope="col">Message</th>
                  <th scope="col">Files</th>
                  <th scope="col">When</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {commits.map((c) => (
                  <CommitRow key={c.commit} repo={id} c={c} project={mayDeploy ? target : ""} />
                ))}
              </tbody>
            </table>
          )}
          {mayDeploy && target && <Curl what="Deploy a commit" method="POST" path={`/api/repos/${id}/deploy`} body={{ projectId: target, commit: commits[0]?.commit ?? 1 }} />}
        </>
      )}
    </Page>
  );
}

function CommitRow(props: { repo: string; c: Schemas["Commit"]; project: string }) {
  const { c } = props;
  const deploy = useAction(async () => {
    const { deployment } = await unwrap(api.POST("/api/repos/{id}/deploy", { params: { path: { id: props.repo } }, body: { projectId: props.project, commit: c.commit } }));
    navigate(`/projects/${props.project}/deployments/${deployment.id}`);
  });
  return (
    <tr>
      <td>
        <a href={`/repos/${props.repo}/files?commit=${c.commit}`}>#{c.commit}</a>
      </td>
      <td>
        {c.message}
        {c.author && <div class="muted small">{c.author}</div>}
      </td>
      <td>
        {c.files} · {bytes(c.size)}
      </td>
      <td>
        <When at={c.createdAt} />
      </td>
      <td class="actions">
        {props.project && (
          <button type="button" class="secondary small" onClick={() => deploy.run()} disabled={deploy.busy}>
            Deploy commit {c.commit}
          </button>
        )}
        <ErrorNote error={deploy.error} />
      </td>
    </tr>
  );
}

type Node = { name: string; path: string; file?: Schemas["File"]; children: Map<string, Node> };

function tree(files: Schemas["File"][]): Node {
  const root: Node = { name: "", path: "", children: new Map() };
  for (const f of files) {
    let n = root;
    const parts = f.path.split("/");
    parts.forEach((part, i) => {
      let c = n.children.get(part);
      if (!c) {
        c = { name: part, path: parts.slice(0, i + 1).join("/"), children: new Map() };
        n.children.set(part, c);
      }
      if (i === parts.length - 1) c.file = f;
      n = c;
    });
  }
  return root;
}

function TreeList(props: { node: Node; href: (p: string) => string; open: string }) {
  const kids = [...props.node.children.values()].sort((a, b) => Number(!!a.file) - Number(!!b.file) || a.name.localeCompare(b.name));
  return (
    <ul class="plain tree">
      {kids.map((k) =>
        k.file ? (
          <li key={k.path}>
            {k.file.readable ? (
              <a href={props.href(k.path)} aria-current={props.open === k.path ? "page" : undefined}>
                {k.name}
              </a>
            ) : (
              <span title={k.file.reason}>{k.name}</span>
            )}{" "}
            <span class="muted small">{bytes(k.file.size)}</span>
          </li>
        ) : (
          <li key={k.path}>
            <details open>
              <summary>{k.name}/</summary>
              <div class="indent">
                <TreeList node={k} href={props.href} open={props.open} />
              </div>
            </details>
          </li>
        ),
      )}
    </ul>
  );
}

// RepoFiles: the file tree at a commit and one file's text.
export function RepoFiles() {
  const { id } = useParams() as { id: string };
  const loc = useLocation();
  const commit = loc.query.get("commit") ?? "";
  const path = loc.query.get("path") ?? "";
  const t = useLoad(() => unwrap(api.GET("/api/repos/{id}/files", { params: { path: { id }, query: query({ commit }) } })), [id, commit]);
  const file = useLoad(
    async () => (path ? (unwrap(api.GET("/api/repos/{id}/files", { params: { path: { id }, query: query({ commit, path }) } })) as unknown as Promise<FileContent>) : undefined),
    [id, commit, path],
  );
  const at = t.data?.commit;
  const href = (p: string) => `/repos/${id}/files?${new URLSearchParams({ ...(commit ? { commit } : {}), path: p })}`;
  return (
    <Page title={at ? `Files at commit ${at}` : "Files"}>
      <p>
        <a href="/repos">← All repos</a>
      </p>
      <RepoTabs id={id} tab="files" />
      <ErrorNote error={t.error} />
      {!t.data && !t.error && <Loading what="the files" />}
      {t.data && (
        <div class="grid-files">
          <section class="card" aria-labelledby="tree-h">
            <h2 id="tree-h">
              {t.data.files.length} {t.data.files.length === 1 ? "file" : "files"}
            </h2>
            <TreeList node={tree(t.data.files)} href={href} open={path} />
          </section>
          <section aria-labelledby="file-h">
            <h2 id="file-h" class="mono">
              {path || "Pick a file"}
            </h2>
            <ErrorNote error={file.error} />
            {path && !file.data && !file.error && <Loading what="the file" />}
            {file.data && (
              <>
                <p class="muted small">
                  {bytes(file.data.size)} at commit {file.data.commit}
                </p>
                <pre class="file" tabIndex={0} aria-label={`Contents of ${path}`}>
                  <code>{file.data.content}</code>
                </pre>
              </>
            )}
            <Curl method="GET" path={`/api/repos/${id}/files?${new URLSearchParams({ ...(commit ? { commit } : {}), ...(path ? { path } : {}) })}`} />
          </section>
        </div>
      )}
    </Page>
  );
}

type FileContent = { commit: number; path: string; size: number; content: string };
