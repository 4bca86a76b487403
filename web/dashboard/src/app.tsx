// The app: the session, the shell around signed-in pages and the route
// table. Every page has its own URL.
import type { FunctionComponent } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, csrf, onSessionEnded, unwrap } from "./api/client";
import { interceptLinks, match, navigate, ParamsContext, useLocation, type Params } from "./router";
import { SessionContext, type Session } from "./session";
import { Loading } from "./components/ui";
import { SignIn } from "./pages/SignIn";
import { Setup } from "./pages/Setup";
import { Home } from "./pages/Home";
import { ProjectOverview, ProjectDeployments, ProjectVariables, ProjectDatabases, ProjectSettings } from "./pages/Project";
import { Deployment } from "./pages/Deployment";
import { Databases, DatabaseConsole } from "./pages/Databases";
import { Members } from "./pages/Members";
import { Keys } from "./pages/Keys";
import { NotFound } from "./pages/NotFound";

type Route = { path: string; page: FunctionComponent; nav?: string };

// Pages open to anyone: they take a token or credentials.
const publicRoutes: Route[] = [
  { path: "/signin", page: SignIn },
  { path: "/setup", page: Setup },
  { path: "/accept", page: Setup },
];

// Signed-in pages. nav names the section the page belongs to.
const routes: Route[] = [
  { path: "/", page: Home, nav: "/" },
  { path: "/projects/:id", page: ProjectOverview, nav: "/" },
  { path: "/projects/:id/deployments", page: ProjectDeployments, nav: "/" },
  { path: "/projects/:id/deployments/:dep", page: Deployment, nav: "/" },
  { path: "/projects/:id/variables", page: ProjectVariables, nav: "/" },
  { path: "/projects/:id/databases", page: ProjectDatabases, nav: "/databases" },
  { path: "/projects/:id/settings", page: ProjectSettings, nav: "/" },
  { path: "/databases", page: Databases, nav: "/databases" },
  { path: "/databases/:id", page: DatabaseConsole, nav: "/databases" },
  { path: "/members", page: Members, nav: "/members" },
  { path: "/keys", page: Keys, nav: "/keys" },
];

function find(list: Route[], path: string): [Route, Params] | null {
  for (const r of list) {
    const p = match(r.path, path);
    if (p) return [r, p];
  }
  return null;
}

export function App() {
  const loc = useLocation();
  // undefined: not known yet; null: signed out.
  const [session, setSession] = useState<Session | null | undefined>(undefined);

  const refresh = useCallback(async () => {
    try {
      const s = await unwrap(api.GET("/api/session"));
      const w = await unwrap(api.GET("/api/workspace"));
      setSession({ member: s.member, workspace: w.workspace, role: s.member.role });
    } catch {
      setSession(null);
    }
  }, []);

  const signOut = useCallback(async () => {
    try {
      await api.DELETE("/api/session");
    } finally {
      csrf.clear();
      setSession(null);
      navigate("/signin");
    }
  }, []);

  useEffect(() => {
    const stop = interceptLinks();
    onSessionEnded(() => {
      setSession(null);
    });
    refresh();
    return stop;
  }, [refresh]);

  const pub = find(publicRoutes, loc.path);
  if (pub) {
    const [route, params] = pub;
    const P = route.page;
    return (
      <ParamsContext.Provider value={params}>
        <main id="main" class="public">
          <P />
        </main>
      </ParamsContext.Provider>
    );
  }
  if (session === undefined) {
    return (
      <main id="main">
        <Loading />
      </main>
    );
  }
  if (session === null) {
    const next = loc.path + (loc.query.toString() ? `?${loc.query}` : "");
    navigate(`/signin${next !== "/" ? `?next=${encodeURIComponent(next)}` : ""}`, { replace: true });
    return null;
  }
  const found = find(routes, loc.path);
  const [route, params] = found ?? [{ path: "", page: NotFound }, {}];
  const P = route.page;
  return (
    <SessionContext.Provider value={{ session, refresh, signOut }}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Shell current={route.nav ?? ""} session={session} signOut={signOut} />
      <main id="main">
        <ParamsContext.Provider value={params}>
          <P key={loc.path} />
        </ParamsContext.Provider>
      </main>
    </SessionContext.Provider>
  );
}

const sections: [string, string][] = [
  ["/", "Projects"],
  ["/databases", "Databases"],
  ["/members", "Members"],
  ["/keys", "API keys"],
];

function Shell(props: { current: string; session: Session; signOut: () => void }) {
  const { session } = props;
  return (
    <header class="shell">
      <div class="brand">
        <a href="/">{session.workspace.name}</a>
        <span class="muted small"> · {session.workspace.plan} plan</span>
      </div>
      <nav aria-label="Sections">
        <ul>
          {sections.map(([href, text]) => (
            <li key={href}>
              <a href={href} aria-current={props.current === href ? "page" : undefined}>
                {text}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="who">
        <span>
          {session.member.email} <span class="muted">({session.role})</span>
        </span>
        <button type="button" class="secondary small" onClick={props.signOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}
