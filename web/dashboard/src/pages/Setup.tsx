import { useState } from "preact/hooks";
import { api, csrf, unwrap } from "../api/client";
import { useLocation } from "../router";
import { Curl, ErrorNote, Field, Page } from "../components/ui";
import { useAction } from "../components/load";

// Setup sets a password from a one-time link: /setup?token=svcsetup_...
// (the owner's first start) or /accept?token=... (an invitation). The
// token leaves the address bar at once; after the password is set the
// member is signed in.
export function Setup() {
  const loc = useLocation();
  const invitation = loc.path === "/accept";
  const [token] = useState(() => {
    const t = loc.query.get("token") ?? "";
    if (t) history.replaceState(null, "", loc.path);
    return t;
  });
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [mismatch, setMismatch] = useState(false);
  const act = useAction(async () => {
    if (password !== again) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    const body = { token, password, ...(name ? { name } : {}) };
    const { member } = await unwrap(api.POST("/api/members/accept", { body }));
    const si = await unwrap(api.POST("/api/session", { body: { email: member.email, password } }));
    csrf.set(si.csrfToken);
    location.assign("/");
  });
  const title = invitation ? "Accept your invitation" : "Set your password";
  if (!token) {
    return (
      <div class="narrow">
        <Page title={title}>
          <p class="error" role="alert">
            This link has no token. Open the whole link you were given (it ends in <code>?token=…</code>), or ask an admin for a
            new invitation.
          </p>
          <p>
            <a href="/signin">Sign in</a> if you already have a password.
          </p>
        </Page>
      </div>
    );
  }
  return (
    <div class="narrow">
      <Page title={title}>
        <p>
          {invitation
            ? "Choose a password to join the workspace. The link works once, for 7 days."
            : "Choose the owner's password for this installation. The link works once, for 7 days."}
        </p>
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault();
            act.run();
          }}
        >
          {invitation && <Field label="Your name (optional)" name="name" autocomplete="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
          <Field
            label="New password"
            type="password"
            name="password"
            autocomplete="new-password"
            required
            minLength={10}
            maxLength={1024}
            hint="At least 10 characters."
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          <Field
            label="The same password again"
            type="password"
            name="password2"
            autocomplete="new-password"
            required
            value={again}
            onInput={(e) => setAgain(e.currentTarget.value)}
          />
          {mismatch && (
            <p class="error" role="alert">
              The two passwords differ: type the same one twice.
            </p>
          )}
          <ErrorNote error={act.error} />
          <button type="submit" disabled={act.busy}>
            {act.busy ? "Saving…" : "Set password and sign in"}
          </button>
          <Curl method="POST" path="/api/members/accept" body={{ token: "<token from the link>", password: "<password>" }} public />
        </form>
      </Page>
    </div>
  );
}
