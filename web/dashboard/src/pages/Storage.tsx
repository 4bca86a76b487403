import { useRef, useState } from "preact/hooks";
import { api, csrf, query, unwrap, type Schemas } from "../api/client";
import { navigate, useLocation, useParams } from "../router";
import { useCan } from "../session";
import { bytes, CopyButton, Curl, ErrorNote, Field, Loading, Page, TextArea, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";
import { ProjectLayout } from "./Project";

// ProjectMemory: the project's memory stores (key-value); create one.
export function ProjectMemory() {
  return <ProjectLayout tab="/memory">{(d) => <StoreList project={d.project.id} />}</ProjectLayout>;
}

function StoreList(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/memory", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const create = useAction(async () => {
    const { store } = await unwrap(api.POST("/api/projects/{id}/memory", { params: { path: { id } }, body: { name } }));
    navigate(`/memory/${store.id}`);
  });
  const stores = list.data?.stores ?? [];
  return (
    <section aria-labelledby="mem-h">
      <h2 id="mem-h">Memory stores</h2>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="stores" />}
      {list.data && stores.length === 0 && <p class="muted">No memory stores.</p>}
      {stores.length > 0 && (
        <table>
          <caption class="visually-hidden">Memory stores</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Keys</th>
              <th scope="col">Size</th>
            </tr>
          </thead>
          <tbody>
            {stores.map((s) => (
              <tr key={s.id}>
                <td>
                  <a href={`/memory/${s.id}`}>{s.name}</a>
                </td>
                <td>
                  {s.keys} of {s.limits.keys}
                </td>
                <td>
                  {bytes(s.bytes)} of {bytes(s.limits.bytes)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can("POST", "/api/projects/{id}/memory") && (
        <form
          class="row"
          aria-label="Create a memory store"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <Field label="Store name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" disabled={create.busy}>
            Create store
          </button>
        </form>
      )}
      <ErrorNote error={create.error} />
    </section>
  );
}

// MemoryStore: keys by prefix with paging; read, write and delete a key.
export function MemoryStore() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const loc = useLocation();
  const prefix = loc.query.get("prefix") ?? "";
  const cursor = loc.query.get("cursor") ?? "";
  const st = useLoad(() => unwrap(api.GET("/api/memory/{id}", { params: { path: { id } } })), [id]);
  const keys = useLoad(() => unwrap(api.GET("/api/memory/{id}/keys", { params: { path: { id }, query: query({ prefix, cursor, limit: 50 }) } })), [id, prefix, cursor]);
  const [draft, setDraft] = useState(prefix);
  const [open, setOpen] = useState<{ key: string; value: unknown }>();
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [ttl, setTtl] = useState("");
  const read = useAction(async (k: string) => {
    const out = await unwrap(api.POST("/api/memory/{id}/bulk/get", { params: { path: { id } }, body: { keys: [k] } }));
    setOpen({ key: k, value: out.values[k] });
  });
  const write = useAction(async () => {
    await unwrap(api.PUT("/api/memory/{id}/bulk", { params: { path: { id } }, body: { entries: [{ key, value, ...(ttl ? { ttlSeconds: Number(ttl) } : {}) }] } }));
    setKey("");
    setValue("");
    await Promise.all([keys.reload(), st.reload()]);
  });
  const del = useAction(async (k: string) => {
    await unwrap(api.POST("/api/memory/{id}/bulk/delete", { params: { path: { id } }, body: { keys: [k] } }));
    setOpen(undefined);
    await Promise.all([keys.reload(), st.reload()]);
  });
  const go = (q: Record<string, string>) => {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v) u.set(k, v);
    navigate(`${loc.path}${u.toString() ? `?${u}` : ""}`);
  };
  const s = st.data?.store;
  const mayWrite = can("PUT", "/api/memory/{id}/bulk");
  return (
    <Page title={s ? `Memory ${s.name}` : "Memory store"}>
      <ErrorNote error={st.error} />
      {s && (
        <p>
          <a href={`/projects/${s.projectId}/memory`}>← The project's stores</a> · {s.keys} keys, {bytes(s.bytes)}
        </p>
      )}
      <div class="grid-2">
        <section aria-labelledby="keys-h">
          <h2 id="keys-h">Keys</h2>
          <form
            class="row"
            aria-label="Keys by prefix"
            onSubmit={(e) => {
              e.preventDefault();
              go({ prefix: draft });
            }}
          >
            <Field label="Prefix" name="prefix" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
            <button type="submit" class="secondary">
              List
            </button>
          </form>
          <ErrorNote error={keys.error} />
          {keys.data && keys.data.keys.length === 0 && <p class="muted">No keys.</p>}
          {keys.data && keys.data.keys.length > 0 && (
            <table>
              <caption class="visually-hidden">Keys in byte order</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Size</th>
                  <th scope="col">Expires</th>
                </tr>
              </thead>
              <tbody>
                {keys.data.keys.map((k) => (
                  <tr key={k.key}>
                    <td>
                      <button type="button" class="secondary small mono" onClick={() => read.run(k.key)}>
                        {k.key}
                      </button>
                    </td>
                    <td>{bytes(k.bytes)}</td>
                    <td>{k.expiresAt ? <When at={k.expiresAt} /> : <span class="muted">never</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <nav class="pager" aria-label="Key pages">
            {cursor && (
              <button type="button" class="secondary" onClick={() => history.back()}>
                ← Back
              </button>
            )}
            {keys.data && !keys.data.listComplete && keys.data.cursor && (
              <button type="button" class="secondary" onClick={() => go({ prefix, cursor: keys.data!.cursor })}>
                Next →
              </button>
            )}
          </nav>
        </section>
        <div>
          <ErrorNote error={read.error} />
          {open && (
            <section class="card" aria-labelledby="val-h">
              <h2 id="val-h" class="mono">
                {open.key}
              </h2>
              <pre class="file">{typeof open.value === "string" ? open.value : JSON.stringify(open.value, null, 2)}</pre>
              {mayWrite && (
                <button type="button" class="danger small" onClick={() => del.run(open.key)} disabled={del.busy}>
                  Delete {open.key}
                </button>
              )}
              <ErrorNote error={del.error} />
            </section>
          )}
          {mayWrite && (
            <form
              class="card"
              aria-labelledby="put-h"
              onSubmit={(e) => {
                e.preventDefault();
                write.run();
              }}
            >
              <h2 id="put-h">Write a key</h2>
              <Field label="Key" name="key" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
              <TextArea label="Value" name="value" rows={3} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
              <Field label="Expires in seconds (optional)" name="ttl" type="number" min={1} value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} />
              <ErrorNote error={write.error} />
              <button type="submit" disabled={write.busy}>
                Write
              </button>
              <Curl method="PUT" path={`/api/memory/${id}/bulk`} body={{ entries: [{ key, value }] }} />
            </form>
          )}
        </div>
      </div>
    </Page>
  );
}

// ProjectBuckets: the project's storage buckets; create one.
export function ProjectBuckets() {
  return <ProjectLayout tab="/buckets">{(d) => <BucketList project={d.project.id} />}</ProjectLayout>;
}

function BucketList(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/buckets", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const create = useAction(async () => {
    const { bucket } = await unwrap(api.POST("/api/projects/{id}/buckets", { params: { path: { id } }, body: { name } }));
    navigate(`/buckets/${bucket.id}`);
  });
  const buckets = list.data?.buckets ?? [];
  return (
    <section aria-labelledby="bk-h">
      <h2 id="bk-h">Buckets</h2>
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="buckets" />}
      {list.data && buckets.length === 0 && <p class="muted">No buckets.</p>}
      {buckets.length > 0 && (
        <table>
          <caption class="visually-hidden">Buckets</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Objects</th>
              <th scope="col">Size</th>
              <th scope="col">Access</th>
            </tr>
          </thead>
          <tbody>
            {buckets.map((b) => (
              <tr key={b.id}>
                <td>
                  <a href={`/buckets/${b.id}`}>{b.name}</a>
                </td>
                <td>{b.objects}</td>
                <td>{bytes(b.bytes)}</td>
                <td>{b.public ? "public" : "private"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {can("POST", "/api/projects/{id}/buckets") && (
        <form
          class="row"
          aria-label="Create a bucket"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <Field label="Bucket name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <button type="submit" disabled={create.busy}>
            Create bucket
          </button>
        </form>
      )}
      <ErrorNote error={create.error} />
    </section>
  );
}

// partBytes is the size of a multipart upload's parts: a file larger than
// one part goes through POST /api/buckets/{id}/uploads (parts of at least
// 5 MiB but the last, as S3).
const partBytes = 8 << 20;

// objectPath is an object's API path, each segment of its key escaped.
function objectPath(bucket: string, key: string): string {
  return `/api/buckets/${encodeURIComponent(bucket)}/objects/${key.split("/").map(encodeURIComponent).join("/")}`;
}

// put sends body with PUT through XMLHttpRequest (fetch reports no upload
// progress), reporting the bytes sent; signal cancels it.
function put(path: string, body: Blob, contentType: string, onSent: (n: number) => void, signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("PUT", path);
    x.setRequestHeader("Content-Type", contentType || "application/octet-stream");
    const token = csrf.get();
    if (token) x.setRequestHeader("X-CSRF-Token", token);
    x.upload.onprogress = (e) => onSent(e.loaded);
    x.onload = () => {
      if (x.status >= 300) {
        let msg = x.responseText.slice(0, 300);
        try {
          msg = JSON.parse(x.responseText).error.message;
        } catch {
          /* not the API's error body */
        }
        reject(new Error(`the upload was refused (HTTP ${x.status}): ${msg}`));
        return;
      }
      resolve(x.responseText ? JSON.parse(x.responseText) : {});
    };
    x.onerror = () => reject(new Error("the upload did not reach the server: check the connection and try again"));
    x.onabort = () => reject(new DOMException("cancelled", "AbortError"));
    if (signal.aborted) {
      reject(new DOMException("cancelled", "AbortError"));
      return;
    }
    signal.addEventListener("abort", () => x.abort(), { once: true });
    x.send(body);
  });
}

// sendFile stores file at key: one PUT, or a multipart upload of
// partBytes parts for a larger file, aborted (its parts removed) when a
// part fails or the upload is cancelled.
async function sendFile(bucket: string, key: string, file: File, onSent: (n: number) => void, signal: AbortSignal) {
  const type = file.type || "application/octet-stream";
  if (file.size <= partBytes) {
    await put(objectPath(bucket, key), file, type, onSent, signal);
    return;
  }
  const { upload } = await unwrap(api.POST("/api/buckets/{id}/uploads", { params: { path: { id: bucket } }, body: { key, contentType: type } }));
  const parts: { partNumber: number; etag: string }[] = [];
  try {
    let done = 0;
    for (let n = 1, off = 0; off < file.size; n++, off += partBytes) {
      const blob = file.slice(off, off + partBytes);
      const path = `/api/buckets/${encodeURIComponent(bucket)}/uploads/${encodeURIComponent(upload.id)}/parts/${n}`;
      const ans = (await put(path, blob, "application/octet-stream", (b) => onSent(done + b), signal)) as { part: { etag: string } };
      done += blob.size;
      parts.push({ partNumber: n, etag: ans.part.etag });
    }
    await unwrap(api.POST("/api/buckets/{id}/uploads/{uploadId}/complete", { params: { path: { id: bucket, uploadId: upload.id } }, body: { parts } }));
  } catch (e) {
    await api.DELETE("/api/buckets/{id}/uploads/{uploadId}", { params: { path: { id: bucket, uploadId: upload.id } } });
    throw e;
  }
}

// BucketPage: objects by prefix with folders rolled up; upload (with a
// progress bar; large files in parts; cancel), share with a signed URL,
// delete; public or private.
export function BucketPage() {
  const { id } = useParams() as { id: string };
  const can = useCan();
  const loc = useLocation();
  const prefix = loc.query.get("prefix") ?? "";
  const cursor = loc.query.get("cursor") ?? "";
  const b = useLoad(() => unwrap(api.GET("/api/buckets/{id}", { params: { path: { id } } })), [id]);
  const objs = useLoad(() => unwrap(api.GET("/api/buckets/{id}/objects", { params: { path: { id }, query: query({ prefix, cursor, delimiter: "/", limit: 100 }) } })), [id, prefix, cursor]);
  const [file, setFile] = useState<File>();
  const [sent, setSent] = useState(-1);
  const [note, setNote] = useState("");
  const cancel = useRef<AbortController | undefined>(undefined);
  const [signed, setSigned] = useState<Schemas["SignedURL"] & { key: string }>();
  const upload = useAction(async () => {
    if (!file) throw new Error("pick a file first");
    const ctl = new AbortController();
    cancel.current = ctl;
    setNote("");
    setSent(0);
    try {
      await sendFile(id, prefix + file.name, file, setSent, ctl.signal);
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") {
        setNote(`Upload of ${file.name} cancelled: nothing was stored.`);
        return;
      }
      throw e;
    } finally {
      cancel.current = undefined;
      setSent(-1);
    }
    setNote(`Uploaded ${file.name} (${bytes(file.size)}).`);
    setFile(undefined);
    await Promise.all([objs.reload(), b.reload()]);
  });
  const sign = useAction(async (key: string) => {
    const out = await unwrap(api.POST("/api/buckets/{id}/signed-urls", { params: { path: { id } }, body: { key, expiresIn: 3600 } }));
    setSigned({ ...out, key });
  });
  const del = useAction(async (key: string) => {
    await unwrap(api.DELETE("/api/buckets/{id}/objects/{key}", { params: { path: { id, key } } }));
    await Promise.all([objs.reload(), b.reload()]);
  });
  const pub = useAction(async (on: boolean) => {
    await unwrap(api.PATCH("/api/buckets/{id}", { params: { path: { id } }, body: { public: on } }));
    await b.reload();
  });
  const bk = b.data?.bucket;
  const up = prefix.replace(/[^/]*\/$/, "");
  return (
    <Page title={bk ? `Bucket ${bk.name}` : "Bucket"}>
      <ErrorNote error={b.error} />
      {bk && (
        <>
          <p>
            <a href={`/projects/${bk.projectId}/buckets`}>← The project's buckets</a> · {bk.objects} objects, {bytes(bk.bytes)} · {bk.public ? "public" : "private"}
            {bk.publicUrl && <span class="mono small"> {bk.publicUrl}</span>}
          </p>
          {can("PATCH", "/api/buckets/{id}") && (
            <p>
              <button type="button" class="secondary small" onClick={() => pub.run(!bk.public)} disabled={pub.busy}>
                Make {bk.public ? "private" : "public"}
              </button>
            </p>
          )}
          <ErrorNote error={pub.error} />
        </>
      )}
      <div class="grid-2">
        <section aria-labelledby="objs-h">
          <h2 id="objs-h">
            Objects{prefix && <span class="mono"> in {prefix}</span>}
          </h2>
          {prefix && (
            <p>
              <a href={`/buckets/${id}${up ? `?prefix=${encodeURIComponent(up)}` : ""}`}>↑ Up a folder</a>
            </p>
          )}
          <ErrorNote error={objs.error ?? del.error ?? sign.error} />
          {objs.data && objs.data.objects.length === 0 && objs.data.prefixes.length === 0 && <p class="muted">Empty.</p>}
          {objs.data && (objs.data.objects.length > 0 || objs.data.prefixes.length > 0) && (
            <table>
              <caption class="visually-hidden">Objects in key order</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Size</th>
                  <th scope="col">Changed</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {objs.data.prefixes.map((p) => (
                  <tr key={p}>
                    <td colSpan={4}>
                      <a href={`/buckets/${id}?prefix=${encodeURIComponent(p)}`} class="mono">
                        {p.slice(prefix.length)}
                      </a>
                    </td>
                  </tr>
                ))}
                {objs.data.objects.map((o) => (
                  <tr key={o.key}>
                    <td class="mono">
                      {o.key.slice(prefix.length)} <span class="muted small">{o.contentType}</span>
                    </td>
                    <td>{bytes(o.size)}</td>
                    <td>
                      <When at={o.lastModified} />
                    </td>
                    <td class="actions">
                      {can("POST", "/api/buckets/{id}/signed-urls") && (
                        <button type="button" class="secondary small" onClick={() => sign.run(o.key)}>
                          Share<span class="visually-hidden"> {o.key}</span>
                        </button>
                      )}
                      {can("DELETE", "/api/buckets/{id}/objects/{key}") && (
                        <button type="button" class="secondary small" onClick={() => del.run(o.key)}>
                          Delete<span class="visually-hidden"> {o.key}</span>
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {objs.data?.nextCursor && (
            <button type="button" class="secondary" onClick={() => navigate(`/buckets/${id}?${new URLSearchParams({ prefix, cursor: objs.data!.nextCursor! })}`)}>
              More →
            </button>
          )}
        </section>
        <div>
          {signed && (
            <div class="secret" role="status">
              <p>
                A link to <span class="mono">{signed.key}</span> for anyone, until <When at={signed.expiresAt} />:
              </p>
              <p class="mono break small">{signed.url}</p>
              <CopyButton text={signed.url} label="Copy link" />
            </div>
          )}
          {can("PUT", "/api/buckets/{id}/objects/{key}") && (
            <form
              class="card"
              aria-labelledby="upl-h"
              onSubmit={(e) => {
                e.preventDefault();
                upload.run();
              }}
            >
              <h2 id="upl-h">Upload{prefix && <span class="mono"> to {prefix}</span>}</h2>
              <div class="field">
                <label for="obj-file">File</label>
                <input id="obj-file" name="file" type="file" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
              </div>
              {file && file.size > partBytes && <p class="hint">Sent in {Math.ceil(file.size / partBytes)} parts of up to 8 MiB (a multipart upload).</p>}
              {sent >= 0 && file && (
                <div class="field">
                  <label for="obj-progress">Uploaded</label>
                  <progress id="obj-progress" max={file.size} value={sent}>
                    {Math.round((sent / Math.max(file.size, 1)) * 100)}%
                  </progress>
                </div>
              )}
              {note && (
                <p role="status" class="note">
                  {note}
                </p>
              )}
              <ErrorNote error={upload.error} />
              <div class="row">
                <button type="submit" disabled={upload.busy || !file}>
                  {upload.busy ? "Uploading…" : "Upload"}
                </button>
                {upload.busy && (
                  <button type="button" class="secondary" onClick={() => cancel.current?.abort()}>
                    Cancel upload
                  </button>
                )}
              </div>
              <Curl method="PUT" path={`/api/buckets/${id}/objects/${prefix}${file?.name ?? "name.txt"}`} />
            </form>
          )}
        </div>
      </div>
    </Page>
  );
}
