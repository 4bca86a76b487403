import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { cli } from "../api/curl";
import { useLocation } from "../router";
import { useCan, useSession } from "../session";
import { Badge, Curl, ErrorNote, Field, Page, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

// Device: approve a command line's login (platform login --device): the
// code it shows is typed or arrives as ?code=, the page shows what asks,
// then a key for the signed-in member goes to it (or it is refused).
export function Device() {
  const loc = useLocation();
  const can = useCan();
  const { session } = useSession();
  const [code, setCode] = useState((loc.query.get("code") ?? "").toUpperCase());
  const [asked, setAsked] = useState(code);
  const [access, setAccess] = useState(session.role === "viewer" ? "read_only" : "full");
  const [project, setProject] = useState("");
  const [done, setDone] = useState<Schemas["ApproveAnswer"] | undefined>();
  const mayApprove = can("POST", "/api/device/approve");
  const req = useLoad(
    () => (asked ? unwrap(api.GET("/api/device/requests/{userCode}", { params: { path: { userCode: asked } } })) : Promise.resolve(undefined)),
    [asked],
  );
  const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
  const body = (deny?: boolean) => ({ userCode: asked || code, ...(deny ? { deny: true } : { access, ...(project ? { projectId: project } : {}) }) });
  const approve = useAction(async (deny: boolean) => {
    setDone(await unwrap(api.POST("/api/device/approve", { body: body(deny) })));
    await req.reload();
  });
  const r = req.data?.request;
  return (
    <Page title="Approve a device login">
      <p>
        <code>platform login --device</code> prints a code such as <code>BCDF-GHJK</code>. Type it here to give that command line a key of yours.
      </p>
      <form
        class="row"
        aria-label="Device code"
        onSubmit={(e) => {
          e.preventDefault();
          setDone(undefined);
          setAsked(code.trim().toUpperCase());
        }}
      >
        <Field label="Code" name="code" required autocomplete="off" class="mono" placeholder="XXXX-XXXX" value={code} onInput={(e) => setCode(e.currentTarget.value)} />
        <button type="submit" class="secondary">
          Look up
        </button>
      </form>
      <ErrorNote error={req.error} />
      {r && (
        <section class="card" aria-labelledby="dev-h">
          <h2 id="dev-h">What is asking</h2>
          <dl>
            <dt>Program</dt>
            <dd>{r.clientName || "(no name given)"}</dd>
            <dt>From address</dt>
            <dd class="mono">{r.clientIp}</dd>
            <dt>Asked</dt>
            <dd>
              <When at={r.createdAt} />
            </dd>
            <dt>Expires</dt>
            <dd>
              <When at={r.expiresAt} />
            </dd>
            <dt>State</dt>
            <dd>
              <Badge state={r.status} />
            </dd>
          </dl>
          {r.status === "pending" && mayApprove && (
            <>
              <p>Approve only a login you started yourself, just now.</p>
              <div class="row">
                <Select
                  label="Access"
                  name="access"
                  options={session.role === "viewer" ? [["read_only", "Read only"]] : [["full", `Full (as you, ${session.role})`], ["read_only", "Read only"]]}
                  value={access}
                  onChange={(e) => setAccess(e.currentTarget.value)}
                />
                <Select
                  label="Project"
                  name="project"
                  options={[["", "Every project"], ...(projects.data?.projects ?? []).map((p): [string, string] => [p.id, p.name])]}
                  value={project}
                  onChange={(e) => setProject(e.currentTarget.value)}
                />
              </div>
              <div class="row">
                <button type="button" onClick={() => approve.run(false)} disabled={approve.busy}>
                  Approve {r.userCode}
                </button>
                <button type="button" class="secondary" onClick={() => approve.run(true)} disabled={approve.busy}>
                  Deny
                </button>
              </div>
            </>
          )}
          <ErrorNote error={approve.error} />
          {done && (
            <p role="status" class={done.status === "approved" ? "secret" : "note"}>
              {done.status === "approved" ? `Approved: the command line now has key ${done.key?.prefix ?? ""}… (${done.key?.access ?? access}). Revoke it on the Keys page.` : "Denied: the command line gets no key."}
            </p>
          )}
          {mayApprove && <Curl method="POST" path="/api/device/approve" body={body(false)} cli={cli("login", "--approve", r.userCode)} />}
        </section>
      )}
      <Curl what="Start a device login" method="POST" path="/api/device/code" body={{ clientName: "my laptop" }} public cli={cli("login", "--device", "--api", location.origin)} />
    </Page>
  );
}
