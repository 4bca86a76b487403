import { useEffect, useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { navigate, useParams } from "../router";
import { useCan } from "../session";
import { Badge, bytes, CopyButton, Curl, ErrorNote, Field, Loading, Page, Select, When } from "../components/ui";
import { useAction, useEvery, useLoad } from "../components/load";
import { Player } from "../components/player";
import { ProjectLayout } from "./Project";

type Asset = Schemas["Asset"];

// ProjectMedia: the project's videos and live channels; create one.
export function ProjectMedia() {
  return <ProjectLayout tab="/media">{(d) => <MediaList project={d.project.id} />}</ProjectLayout>;
}

function MediaList(props: { project: string }) {
  const id = props.project;
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/projects/{id}/media", { params: { path: { id } } })), [id]);
  const [name, setName] = useState("");
  const [kind, setKind] = useState("video");
  const create = useAction(async () => {
    const out = await unwrap(api.POST("/api/projects/{id}/media", { params: { path: { id } }, body: { name, kind } }));
    navigate(`/media/${out.asset.id}`);
  });
  const assets = list.data?.assets ?? [];
  // Processing states and live channels change without a reload.
  useEvery(list.reload, 2000, assets.some((a) => a.status === "processing" || a.status === "live"));
  return (
    <>
      <section aria-labelledby="media-h">
        <h2 id="media-h">Videos and live channels</h2>
        <ErrorNote error={list.error} />
        {!list.data && !list.error && <Loading what="media" />}
        {list.data && assets.length === 0 && <p class="muted">No videos yet.</p>}
        {assets.length > 0 && (
          <table>
            <caption class="visually-hidden">Videos and live channels</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Length</th>
                <th scope="col">Made</th>
              </tr>
            </thead>
            <tbody>
              {assets.map((a) => (
                <tr key={a.id}>
                  <td>
                    <a href={`/media/${a.id}`}>{a.name}</a>
                  </td>
                  <td>{a.kind}</td>
                  <td>
                    <Badge state={a.status} />
                  </td>
                  <td>{a.duration ? `${a.duration.toFixed(1)} s` : ""}</td>
                  <td>
                    <When at={a.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {can("POST", "/api/projects/{id}/media") && (
        <form
          class="card narrow"
          aria-labelledby="media-new-h"
          onSubmit={(e) => {
            e.preventDefault();
            create.run();
          }}
        >
          <h2 id="media-new-h">Add a video or a live channel</h2>
          <Field label="Name" name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          <Select label="Kind" name="kind" options={[["video", "Video (upload a file)"], ["live", "Live channel (stream with RTMP)"]]} value={kind} onChange={(e) => setKind(e.currentTarget.value)} />
          <ErrorNote error={create.error} />
          <button type="submit" disabled={create.busy}>
            Add {kind === "live" ? "channel" : "video"}
          </button>
          <Curl method="POST" path={`/api/projects/${id}/media`} body={{ name, kind }} />
        </form>
      )}
    </>
  );
}

// MediaAsset: one video or channel: its state (followed while it
// processes), upload with progress, the player when ready, and the live
// controls.
export function MediaAsset() {
  const { id } = useParams() as { id: string };
  const a = useLoad(() => unwrap(api.GET("/api/media/{id}", { params: { path: { id } } })), [id]);
  const asset = a.data?.asset;
  const busy = asset && (asset.status === "processing" || asset.status === "live");
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(() => a.reload(), 2000);
    return () => clearInterval(t);
  }, [busy, a.reload]);
  return (
    <Page title={asset ? `Video ${asset.name}` : "Video"}>
      <ErrorNote error={a.error} />
      {!asset && !a.error && <Loading what="the video" />}
      {asset && (
        <>
          <p>
            <a href={`/projects/${asset.projectId}/media`}>← The project's media</a>
          </p>
          <div class="grid-2">
            <div>
              {asset.status === "ready" && asset.playbackUrl && <Player src={asset.playbackUrl} poster={asset.posterUrl} title={asset.name} />}
              {asset.kind === "live" && asset.status === "live" && asset.playbackUrl && <Player src={asset.playbackUrl} title={asset.name} />}
              {asset.status === "pending_upload" && <Upload asset={asset} onDone={a.reload} />}
              {asset.status === "processing" && (
                <p role="status" class="note">
                  Processing: the renditions are being made. This page follows it.
                </p>
              )}
              {asset.failure && (
                <p class="error" role="alert">
                  {asset.failure.message}
                </p>
              )}
              {asset.kind === "live" && <Live asset={asset} onDone={a.reload} />}
            </div>
            <dl class="facts card">
              <dt>Id</dt>
              <dd class="mono">{asset.id}</dd>
              <dt>State</dt>
              <dd>
                <Badge state={asset.status} />
              </dd>
              <dt>Kind</dt>
              <dd>{asset.kind}</dd>
              {asset.duration !== undefined && (
                <>
                  <dt>Length</dt>
                  <dd>{asset.duration.toFixed(1)} s</dd>
                </>
              )}
              {asset.width !== undefined && (
                <>
                  <dt>Size</dt>
                  <dd>
                    {asset.width}×{asset.height}
                  </dd>
                </>
              )}
              {asset.renditions && (
                <>
                  <dt>Renditions</dt>
                  <dd>{asset.renditions.join(", ")}</dd>
                </>
              )}
              {asset.storedBytes !== undefined && (
                <>
                  <dt>Stored</dt>
                  <dd>{bytes(asset.storedBytes)}</dd>
                </>
              )}
              {asset.playbackUrl && (
                <>
                  <dt>Playback</dt>
                  <dd class="mono break small">{asset.playbackUrl}</dd>
                </>
              )}
            </dl>
          </div>
        </>
      )}
    </Page>
  );
}

function Upload(props: { asset: Asset; onDone: () => Promise<void> }) {
  const can = useCan();
  const [file, setFile] = useState<File>();
  const [progress, setProgress] = useState(-1);
  const up = useAction(async () => {
    if (!file) throw new Error("pick a video file first");
    const { uploadUrl } = await unwrap(api.POST("/api/media/{id}/upload", { params: { path: { id: props.asset.id } } }));
    const form = new FormData();
    form.append("file", file);
    setProgress(0);
    await new Promise<void>((resolve, reject) => {
      const x = new XMLHttpRequest();
      x.open("POST", uploadUrl);
      x.upload.onprogress = (e) => e.lengthComputable && setProgress(Math.round((e.loaded / e.total) * 100));
      x.onload = () => (x.status < 300 ? resolve() : reject(new Error(`the upload was refused (HTTP ${x.status}): ${x.responseText.slice(0, 200)}`)));
      x.onerror = () => reject(new Error("the upload did not reach the server"));
      x.send(form);
    });
    setProgress(100);
    await props.onDone();
  });
  if (!can("POST", "/api/media/{id}/upload")) return <p class="note">Waiting for its file: uploading needs a developer or above.</p>;
  return (
    <form
      class="card"
      aria-labelledby="up-h"
      onSubmit={(e) => {
        e.preventDefault();
        up.run();
      }}
    >
      <h2 id="up-h">Upload the video</h2>
      <div class="field">
        <label for="video-file">Video file</label>
        <input id="video-file" name="file" type="file" accept="video/*" onChange={(e) => setFile(e.currentTarget.files?.[0])} />
      </div>
      {progress >= 0 && (
        <div class="field">
          <label for="up-progress">Uploaded</label>
          <progress id="up-progress" max={100} value={progress}>
            {progress}%
          </progress>
        </div>
      )}
      <ErrorNote error={up.error} />
      <button type="submit" disabled={up.busy || !file}>
        {up.busy ? "Uploading…" : "Upload"}
      </button>
      <Curl what="Get an upload URL" method="POST" path={`/api/media/${props.asset.id}/upload`} />
    </form>
  );
}

function Live(props: { asset: Asset; onDone: () => Promise<void> }) {
  const can = useCan();
  const act = useAction(async (action: "go-live" | "end-stream") => {
    await unwrap(api.PATCH("/api/media/{id}", { params: { path: { id: props.asset.id } }, body: { action } }));
    await props.onDone();
  });
  const a = props.asset;
  return (
    <section class="card" aria-labelledby="live-h">
      <h2 id="live-h">Live</h2>
      {a.ingestUrl && (
        <p>
          Ingest: <span class="mono break">{a.ingestUrl}</span> <CopyButton text={a.ingestUrl} label="Copy address" />
        </p>
      )}
      {a.streamKey ? (
        <p>
          Stream key: <span class="mono break">{a.streamKey}</span> <CopyButton text={a.streamKey} label="Copy key" />
        </p>
      ) : (
        <p class="muted small">The stream key is shown to developers and above.</p>
      )}
      {can("PATCH", "/api/media/{id}") && (
        <div class="row">
          <button type="button" onClick={() => act.run("go-live")} disabled={act.busy || a.status === "live"}>
            Go live
          </button>
          <button type="button" class="secondary" onClick={() => act.run("end-stream")} disabled={act.busy || a.status !== "live"}>
            End stream
          </button>
        </div>
      )}
      <ErrorNote error={act.error} />
    </section>
  );
}
