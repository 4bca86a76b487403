import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api/client";
import { useLocation } from "../router";
import { useSession } from "../session";
import { Badge, Curl, ErrorNote, Field, Page, When } from "../components/ui";
import { useAction } from "../components/load";
import { QRCode } from "../components/qr";

// Account: the signed-in member's own password, two-factor enrolment with
// a QR code drawn in the browser, and e-mail verification.
export function Account() {
  const { session } = useSession();
  const m = session.member;
  return (
    <Page title="Your account">
      <dl class="facts card">
        <dt>E-mail</dt>
        <dd>{m.email}</dd>
        <dt>Role</dt>
        <dd>{session.role}</dd>
        <dt>Member since</dt>
        <dd>
          <When at={m.createdAt} />
        </dd>
      </dl>
      <div class="grid-2">
        <div>
          <TwoFactor />
          <Password />
        </div>
        <EmailVerification />
      </div>
    </Page>
  );
}

function Password() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [again, setAgain] = useState("");
  const [done, setDone] = useState(false);
  const act = useAction(async () => {
    setDone(false);
    if (next !== again) throw new Error("the two new passwords differ: type the same one twice");
    await unwrap(api.PUT("/api/account/password", { body: { currentPassword: current, newPassword: next } }));
    setCurrent("");
    setNext("");
    setAgain("");
    setDone(true);
  });
  return (
    <form
      class="card"
      aria-labelledby="pw-h"
      onSubmit={(e) => {
        e.preventDefault();
        act.run();
      }}
    >
      <h2 id="pw-h">Change your password</h2>
      <Field label="Current password" name="currentPassword" type="password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />
      <Field label="New password" name="newPassword" type="password" autocomplete="new-password" required minLength={12} value={next} onInput={(e) => setNext(e.currentTarget.value)} hint="At least 12 characters." />
      <Field label="New password again" name="newPassword2" type="password" autocomplete="new-password" required value={again} onInput={(e) => setAgain(e.currentTarget.value)} />
      <ErrorNote error={act.error} />
      {done && (
        <p role="status" class="secret">
          Password changed. Your other sessions are signed out.
        </p>
      )}
      <button type="submit" disabled={act.busy}>
        Change password
      </button>
      <Curl method="PUT" path="/api/account/password" body={{ currentPassword: "…", newPassword: "…" }} />
    </form>
  );
}

function TwoFactor() {
  const { session, refresh } = useSession();
  const on = session.member.twoFactor;
  const [enrol, setEnrol] = useState<Schemas["TOTPEnrollment"]>();
  const [code, setCode] = useState("");
  const [msg, setMsg] = useState("");
  const start = useAction(async () => {
    setMsg("");
    setEnrol(await unwrap(api.POST("/api/account/totp")));
  });
  const confirm = useAction(async () => {
    await unwrap(api.POST("/api/account/totp/confirm", { body: { code: code.trim() } }));
    setEnrol(undefined);
    setCode("");
    setMsg("Two-factor is on: signing in now asks for a code.");
    await refresh();
  });
  const off = useAction(async () => {
    await unwrap(api.DELETE("/api/account/totp", { body: { code: code.trim() } }));
    setCode("");
    setMsg("Two-factor is off.");
    await refresh();
  });
  return (
    <section class="card" aria-labelledby="tf-h">
      <h2 id="tf-h">Two-factor sign-in</h2>
      <p>
        <Badge state={on ? "enabled" : "disabled"} /> {on ? "A code from your authenticator app is asked at every sign-in." : "Signing in asks only for your password."}
      </p>
      {msg && (
        <p role="status" class="secret">
          {msg}
        </p>
      )}
      {!on && !enrol && (
        <>
          <ErrorNote error={start.error} />
          <button type="button" onClick={() => start.run()} disabled={start.busy}>
            Set up two-factor
          </button>
          <Curl method="POST" path="/api/account/totp" />
        </>
      )}
      {!on && enrol && (
        <form
          aria-label="Confirm two-factor"
          onSubmit={(e) => {
            e.preventDefault();
            confirm.run();
          }}
        >
          <p>Scan this code with an authenticator app, then type the six digits it shows.</p>
          <QRCode text={enrol.otpauthUrl} label="QR code of the two-factor secret for your authenticator app" />
          <p class="small">
            Or type the secret: <span class="mono break" id="totp-secret">{enrol.secret}</span>
          </p>
          {enrol.note && <p class="muted small">{enrol.note}</p>}
          <Field label="Code from the app" name="code" inputMode="numeric" autocomplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
          <ErrorNote error={confirm.error} />
          <button type="submit" disabled={confirm.busy}>
            Turn two-factor on
          </button>
          <Curl method="POST" path="/api/account/totp/confirm" body={{ code: "123456" }} />
        </form>
      )}
      {on && (
        <form
          aria-label="Turn two-factor off"
          onSubmit={(e) => {
            e.preventDefault();
            off.run();
          }}
        >
          <Field label="Code from the app" name="code" inputMode="numeric" autocomplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} hint="Turning two-factor off needs a current code." />
          <ErrorNote error={off.error} />
          <button type="submit" class="secondary" disabled={off.busy}>
            Turn two-factor off
          </button>
          <Curl method="DELETE" path="/api/account/totp" body={{ code: "123456" }} />
        </form>
      )}
    </section>
  );
}

function EmailVerification() {
  const { session, refresh } = useSession();
  const loc = useLocation();
  const verified = session.member.emailVerified;
  const [sent, setSent] = useState<Schemas["VerificationSent"]>();
  const [token, setToken] = useState(loc.query.get("verify") ?? "");
  const send = useAction(async () => {
    setSent(await unwrap(api.POST("/api/account/email/verification")));
  });
  const verify = useAction(async () => {
    await unwrap(api.POST("/api/account/email/verify", { body: { token: token.trim() } }));
    setToken("");
    await refresh();
  });
  return (
    <section class="card" aria-labelledby="ev-h">
      <h2 id="ev-h">E-mail address</h2>
      <p>
        {session.member.email} <Badge state={verified ? "verified" : "pending"} />
      </p>
      {verified ? (
        <p class="muted">Your address is verified.</p>
      ) : (
        <>
          <p>We mail you a token; paste it here (it works once, for 24 hours).</p>
          <ErrorNote error={send.error} />
          <button type="button" class="secondary" onClick={() => send.run()} disabled={send.busy}>
            {sent ? "Send again" : "Send the verification e-mail"}
          </button>
          {sent && (
            <p role="status" class="secret">
              Sent to {sent.email}; the token expires <When at={sent.expiresAt} />. {sent.note}
            </p>
          )}
          <Curl method="POST" path="/api/account/email/verification" />
          <form
            aria-label="Verify your e-mail"
            onSubmit={(e) => {
              e.preventDefault();
              verify.run();
            }}
          >
            <Field label="Token from the e-mail" name="token" required class="mono" value={token} onInput={(e) => setToken(e.currentTarget.value)} />
            <ErrorNote error={verify.error} />
            <button type="submit" disabled={verify.busy}>
              Verify
            </button>
          </form>
        </>
      )}
    </section>
  );
}
