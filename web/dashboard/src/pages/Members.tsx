import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { roles } from "../api/perms";
import { useCan, useSession } from "../session";
import { Badge, CopyButton, Curl, ErrorNote, Field, Loading, Page, Select, When } from "../components/ui";
import { useAction, useLoad } from "../components/load";

const roleOptions: [string, string][] = roles.map((r) => [r, r]);

// Members: who is in the workspace and with which role; admins invite,
// change roles and remove.
export function Members() {
  const can = useCan();
  const list = useLoad(() => unwrap(api.GET("/api/members")), []);
  const manage = can("POST", "/api/members");
  return (
    <Page title="Members">
      <ErrorNote error={list.error} />
      {!list.data && !list.error && <Loading what="members" />}
      {list.data && (
        <table>
          <caption class="visually-hidden">Members</caption>
          <thead>
            <tr>
              <th scope="col">E-mail</th>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Two-factor</th>
              <th scope="col">Joined</th>
              {manage && (
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {list.data.members.map((m) => (
              <MemberRow key={m.id} m={m} manage={manage} onChange={list.reload} />
            ))}
          </tbody>
        </table>
      )}
      {manage && list.data && list.data.members.length > 0 && (
        <>
          <Curl what="Change a role" method="PATCH" path={`/api/members/${list.data.members[0]!.id}`} body={{ role: "developer" }} />
          <Curl what="Remove a member" method="DELETE" path={`/api/members/${list.data.members[0]!.id}`} />
        </>
      )}
      {manage ? <Invite onDone={list.reload} /> : <p class="note">Inviting and managing members needs an admin.</p>}
    </Page>
  );
}

function MemberRow(props: { m: Schemas["Member"]; manage: boolean; onChange: () => Promise<void> }) {
  const { m } = props;
  const { session } = useSession();
  const [confirm, setConfirm] = useState(false);
  const setRole = useAction(async (role: string) => {
    await unwrap(api.PATCH("/api/members/{id}", { params: { path: { id: m.id } }, body: { role } }));
    await props.onChange();
  });
  const remove = useAction(async () => {
    await unwrap(api.DELETE("/api/members/{id}", { params: { path: { id: m.id } } }));
    await props.onChange();
  });
  const self = m.id === session.member.id;
  return (
    <tr>
      <td>
        {m.email}
        {self && <span class="muted"> (you)</span>}
      </td>
      <td>{m.name}</td>
      <td>
        {props.manage && !self ? (
          <Select label={`Role of ${m.email}`} options={roleOptions} value={m.role} onChange={(e) => setRole.run(e.currentTarget.value)} class="compact" />
        ) : (
          m.role
        )}
        <ErrorNote error={setRole.error} />
      </td>
      <td>
        <Badge state={m.status} />
      </td>
      <td>{m.twoFactor ? "on" : "off"}</td>
      <td>
        <When at={m.createdAt} />
      </td>
      {props.manage && (
        <td class="actions">
          {!self &&
            (confirm ? (
              <>
                <button type="button" class="danger small" onClick={() => remove.run()} disabled={remove.busy}>
                  Remove {m.email}
                </button>
                <button type="button" class="secondary small" onClick={() => setConfirm(false)}>
                  Keep
                </button>
              </>
            ) : (
              <button type="button" class="secondary small" onClick={() => setConfirm(true)}>
                Remove<span class="visually-hidden"> {m.email}</span>
              </button>
            ))}
          <ErrorNote error={remove.error} />
        </td>
      )}
    </tr>
  );
}

function Invite(props: { onDone: () => Promise<void> }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [role, setRole] = useState("developer");
  const [link, setLink] = useState<{ url: string; email: string; expiresAt: string }>();
  const act = useAction(async () => {
    const inv = await unwrap(api.POST("/api/members", { body: { email, role, ...(name ? { name } : {}) } }));
    setLink({ url: `${location.origin}/accept?token=${encodeURIComponent(inv.token)}`, email: inv.member.email, expiresAt: inv.expiresAt });
    setEmail("");
    setName("");
    await props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="invite-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="invite-h">Invite a member</h2>
      <div class="row">
        <Field label="E-mail" type="email" name="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <Field label="Name (optional)" name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <Select label="Role" name="role" options={roleOptions} value={role} onChange={(e) => setRole(e.currentTarget.value)} />
      </div>
      <ErrorNote error={act.error} />
      <button type="submit" disabled={act.busy}>
        Invite
      </button>
      {link && (
        <div class="secret" role="status">
          <p>
            Send this link to {link.email}: it sets their password and works once, until <When at={link.expiresAt} />. It is shown only now.
          </p>
          <p class="mono break">{link.url}</p>
          <CopyButton text={link.url} label="Copy link" />
        </div>
      )}
      <Curl method="POST" path="/api/members" body={{ email, role, ...(name ? { name } : {}) }} />
    </form>
  );
}
