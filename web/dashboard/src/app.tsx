// The app: the session, the shell around signed-in pages and the route
// table. Every page has its own URL.
import type { FunctionComponent } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, csrf, onSessionEnded, unwrap } from "./api/client";
import { interceptLinks, match, navigate, ParamsContext, useLocation, type Params } from "./router";
import { SessionContext, type Session } from "./session";
import { can } from "./api/perms";
import { Loading } from "./components/ui";
import { SignIn } from "./pages/SignIn";
import { Setup } from "./pages/Setup";
import { Home } from "./pages/Home";
import { ProjectOverview, ProjectDeployments, ProjectVariables, ProjectDatabases, ProjectSettings } from "./pages/Project";
import { Deployment } from "./pages/Deployment";
import { NotFound } from "./pages/NotFound";
import { lazyPage } from "./components/lazy";
import { pickProject, redirect } from "./pages/Redirects";
import { WorkspaceSwitcher } from "./components/switcher";

// Pages loaded when first opened (components/lazy.tsx).
const Databases = lazyPage(() => import("./pages/Databases").then((m) => m.Databases));
const DatabaseConsole = lazyPage(() => import("./pages/Databases").then((m) => m.DatabaseConsole));
const Members = lazyPage(() => import("./pages/Members").then((m) => m.Members));
const Keys = lazyPage(() => import("./pages/Keys").then((m) => m.Keys));
const Account = lazyPage(() => import("./pages/Account").then((m) => m.Account));
const Usage = lazyPage(() => import("./pages/Usage").then((m) => m.Usage));
const Audit = lazyPage(() => import("./pages/Audit").then((m) => m.Audit));
const Repos = lazyPage(() => import("./pages/Repos").then((m) => m.Repos));
const Repo = lazyPage(() => import("./pages/Repos").then((m) => m.Repo));
const RepoFiles = lazyPage(() => import("./pages/Repos").then((m) => m.RepoFiles));
const ProjectPayments = lazyPage(() => import("./pages/Payments").then((m) => m.ProjectPayments));
const Security = lazyPage(() => import("./pages/Security").then((m) => m.Security));
const Shield = lazyPage(() => import("./pages/Security").then((m) => m.Shield));
const CDN = lazyPage(() => import("./pages/Security").then((m) => m.CDN));
const ProjectMedia = lazyPage(() => import("./pages/Media").then((m) => m.ProjectMedia));
const MediaAsset = lazyPage(() => import("./pages/Media").then((m) => m.MediaAsset));
const ProjectVectors = lazyPage(() => import("./pages/Vectors").then((m) => m.ProjectVectors));
const VectorCollection = lazyPage(() => import("./pages/Vectors").then((m) => m.VectorCollection));
const ProjectAgents = lazyPage(() => import("./pages/Agents").then((m) => m.ProjectAgents));
const AgentPage = lazyPage(() => import("./pages/Agents").then((m) => m.AgentPage));
const AI = lazyPage(() => import("./pages/AI").then((m) => m.AI));
const ProjectMail = lazyPage(() => import("./pages/Mail").then((m) => m.ProjectMail));
const MailDomain = lazyPage(() => import("./pages/Mail").then((m) => m.MailDomain));
const ProjectPools = lazyPage(() => import("./pages/Pools").then((m) => m.ProjectPools));
const Pool = lazyPage(() => import("./pages/Pools").then((m) => m.Pool));
const ProjectMemory = lazyPage(() => import("./pages/Storage").then((m) => m.ProjectMemory));
const MemoryStore = lazyPage(() => import("./pages/Storage").then((m) => m.MemoryStore));
const ProjectBuckets = lazyPage(() => import("./pages/Storage").then((m) => m.ProjectBuckets));
const BucketPage = lazyPage(() => import("./pages/Storage").then((m) => m.BucketPage));
const Workspace = lazyPage(() => import("./pages/Workspaces").then((m) => m.Workspace));
const Plans = lazyPage(() => import("./pages/Workspaces").then((m) => m.Plans));
const ProjectDomains = lazyPage(() => import("./pages/Domains").then((m) => m.ProjectDomains));
const Device = lazyPage(() => import("./pages/Device").then((m) => m.Device));

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
  { path: "/account", page: Account, nav: "/account" },
  { path: "/usage", page: Usage, nav: "/usage" },
  { path: "/audit", page: Audit, nav: "/audit" },
  { path: "/repos", page: Repos, nav: "/repos" },
  { path: "/repos/:id", page: Repo, nav: "/repos" },
  { path: "/repos/:id/files", page: RepoFiles, nav: "/repos" },
  { path: "/projects/:id/payments", page: ProjectPayments, nav: "/" },
  { path: "/security", page: Security, nav: "/security" },
  { path: "/security/shield", page: Shield, nav: "/security" },
  { path: "/security/cdn", page: CDN, nav: "/security" },
  { path: "/projects/:id/media", page: ProjectMedia, nav: "/" },
  { path: "/media/:id", page: MediaAsset, nav: "/" },
  { path: "/projects/:id/vectors", page: ProjectVectors, nav: "/" },
  { path: "/vectors/:id", page: VectorCollection, nav: "/" },
  { path: "/projects/:id/agents", page: ProjectAgents, nav: "/" },
  { path: "/agents/:id", page: AgentPage, nav: "/" },
  { path: "/ai", page: AI, nav: "/ai" },
  { path: "/projects/:id/mail", page: ProjectMail, nav: "/" },
  { path: "/mail/domains/:id", page: MailDomain, nav: "/" },
  { path: "/projects/:id/auth-pools", page: ProjectPools, nav: "/" },
  { path: "/auth-pools/:id", page: Pool, nav: "/" },
  { path: "/projects/:id/memory", page: ProjectMemory, nav: "/" },
  { path: "/memory/:id", page: MemoryStore, nav: "/" },
  { path: "/projects/:id/buckets", page: ProjectBuckets, nav: "/" },
  { path: "/buckets/:id", page: BucketPage, nav: "/" },
  { path: "/projects/:id/domains", page: ProjectDomains, nav: "/" },
  { path: "/workspace", page: Workspace, nav: "/workspace" },
  { path: "/plan", page: Plans, nav: "/plan" },
  { path: "/device", page: Device, nav: "" },
  // Addresses the attention list and the API's links name.
  { path: "/settings/billing", page: redirect(() => "/usage"), nav: "/usage" },
  { path: "/shield", page: redirect(() => "/security/shield"), nav: "/security" },
  { path: "/vectors", page: pickProject("vectors", "Vector collections"), nav: "/" },
  { path: "/media", page: pickProject("media", "Videos"), nav: "/" },
  { path: "/payments", page: pickProject("payments", "Payments"), nav: "/" },
  { path: "/auth-pools", page: pickProject("auth-pools", "Sign-in pools"), nav: "/" },
  { path: "/projects/:id/payments/webhooks", page: redirect((p) => `/projects/${p.id}/payments`), nav: "/" },
  { path: "/projects/:id/memory/:store", page: redirect((p) => `/memory/${p.store}`), nav: "/" },
  { path: "/projects/:id/auth-pools/:pool", page: redirect((p) => `/auth-pools/${p.pool}`), nav: "/" },
  { path: "/projects/:id/emails", page: redirect((p) => `/projects/${p.id}/mail`), nav: "/" },
  { path: "/projects/:id/emails/domains", page: redirect((p) => `/projects/${p.id}/mail`), nav: "/" },
  { path: "/settings/plan", page: redirect(() => "/plan"), nav: "/plan" },
  { path: "/plans", page: redirect(() => "/plan"), nav: "/plan" },
  { path: "/settings/workspace", page: redirect(() => "/workspace"), nav: "/workspace" },
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
  ["/repos", "Repos"],
  ["/databases", "Databases"],
  ["/ai", "AI"],
  ["/members", "Members"],
  ["/keys", "API keys"],
  ["/usage", "Usage"],
  ["/plan", "Plan"],
  ["/workspace", "Workspace"],
  ["/security", "Security"],
  ["/audit", "Audit log"],
];

function Shell(props: { current: string; session: Session; signOut: () => void }) {
  const { session } = props;
  return (
    <header class="shell">
      <div class="brand">
        <a href="/">{session.workspace.name}</a>
        <span class="muted small"> · {session.workspace.plan} plan</span>
        <WorkspaceSwitcher />
      </div>
      <nav aria-label="Sections">
        <ul>
          {sections.filter(([href]) => href !== "/audit" || can(session.role, "GET", "/api/orgs/{id}/audit-logs")).map(([href, text]) => (
            <li key={href}>
              <a href={href} aria-current={props.current === href ? "page" : undefined}>
                {text}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="who">
        <a href="/account" aria-current={props.current === "/account" ? "page" : undefined}>
          {session.member.email} <span class="muted">({session.role})</span>
        </a>
        <button type="button" class="secondary small" onClick={props.signOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}
