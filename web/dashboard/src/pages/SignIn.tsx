import { useEffect, useState } from "preact/hooks";
import { api, csrf, unwrap } from "../api/client";
import { navigate, useLocation } from "../router";
import { Curl, ErrorNote, Field, Page } from "../components/ui";
import { useAction } from "../components/load";

// safeNext keeps a redirect inside the dashboard.
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/api/")) return "/";
  return next;
}

// SignIn: e-mail, password and, with two-factor on, the authenticator's
// code. The API answers the same for a wrong password and a missing code
// (so it does not tell who has two-factor on): the code field is always
// there, and said to be needed after a refusal.
export function SignIn() {
  const loc = useLocation();
  const [email, setEmail] = useState(loc.query.get("email") ?? "");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [refused, setRefused] = useState(false);
  const act = useAction(async () => {
    try {
      const body = { email, password, ...(code ? { code } : {}) };
      const si = await unwrap(api.POST("/api/session", { body }));
      csrf.set(si.csrfToken);
      // A full load: the app reads the new session from the API.
      location.assign(safeNext(loc.query.get("next")));
    } catch (e) {
      setRefused(true);
      throw e;
    }
  });
  useEffect(() => {
    // Signed in already (a second tab): go on.
    api.GET("/api/session").then(({ response }) => {
      if (response.ok && csrf.get()) navigate(safeNext(loc.query.get("next")), { replace: true });
    });
  }, []);
  return (
    <div class="narrow">
      <Page title="Sign in">
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault();
            act.run();
          }}
        >
          <Field label="E-mail" type="email" name="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          <Field
            label="Password"
            type="password"
            name="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
          <Field
            label="Two-factor code"
            name="code"
            inputMode="numeric"
            autocomplete="one-time-code"
            pattern="[0-9]{6}"
            maxLength={6}
            value={code}
            onInput={(e) => setCode(e.currentTarget.value.trim())}
            hint={
              refused
                ? "If two-factor is on for your account, enter the 6-digit code from your authenticator app."
                : "Only if you turned two-factor on: the 6-digit code from your authenticator app."
            }
          />
          <ErrorNote error={act.error} />
          <button type="submit" disabled={act.busy}>
            {act.busy ? "Signing in…" : "Sign in"}
          </button>
          <Curl method="POST" path="/api/session" body={{ email, password: "<password>", ...(code ? { code } : {}) }} public />
        </form>
        <p class="muted small">
          New here? Open the link from <code>make run</code> (first start) or from the person who invited you to set your password.
        </p>
      </Page>
    </div>
  );
}
