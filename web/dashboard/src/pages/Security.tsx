import { useState } from "preact/hooks";
import { api, query, unwrap, type Schemas } from "../api/client";
import { navigate, useLocation } from "../router";
import { useCan } from "../session";
import { Badge, Curl, ErrorNote, Field, Loading, Page, Select } from "../components/ui";
import { useAction, useEvery, useLoad } from "../components/load";
import { BarChart } from "../components/chart";

// Where each security check is fixed.
const fixedAt: Record<string, [string, string]> = {
  two_factor: ["/account", "Your account: two-factor"],
  full_access_keys: ["/keys", "API keys"],
  oldest_key: ["/keys", "API keys"],
  never_used_keys: ["/keys", "API keys"],
  api_key_activity: ["/keys", "API keys"],
  owners_and_admins: ["/members", "Members"],
  domain_verification: ["/", "Projects"],
  environment_variables: ["/", "Projects: Variables"],
  end_user_lockouts: ["/", "Projects: Sign-in pools"],
  password_hashing: ["/account", "Your account"],
  audit_activity: ["/audit", "Audit log"],
};

function Tabs(props: { tab: string }) {
  const tabs: [string, string][] = [
    ["/security", "Overview"],
    ["/security/shield", "Shield"],
    ["/security/cdn", "CDN"],
  ];
  return (
    <nav aria-label="Security" class="tabs">
      <ul>
        {tabs.map(([href, text]) => (
          <li key={href}>
            <a href={href} aria-current={props.tab === href ? "page" : undefined}>
              {text}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

// Security: the score, every check with what fixes it and a link to the
// page where it is fixed, and the audit changes per hour.
export function Security() {
  const ov = useLoad(() => unwrap(api.GET("/api/security/overview")), []);
  const o = ov.data;
  return (
    <Page title="Security">
      <Tabs tab="/security" />
      <ErrorNote error={ov.error} />
      {!o && !ov.error && <Loading what="the overview" />}
      {o && (
        <div class="grid-2">
          <section aria-labelledby="checks-h">
            <h2 id="checks-h">Checks</h2>
            <ul class="plain check-list">
              {o.checks.map((c) => (
                <CheckItem key={c.id} c={c} />
              ))}
            </ul>
          </section>
          <div>
            <section class="card" aria-labelledby="score-h">
              <h2 id="score-h">Score</h2>
              <p>
                <span class="score">{o.score}</span> <span class="muted">of 100</span>
              </p>
              <p class="muted small">Worked out {new Date(o.generatedAt).toISOString().slice(0, 16).replace("T", " ")} UTC from the scored checks.</p>
            </section>
            <section class="card" aria-labelledby="cph-h">
              <h2 id="cph-h">Changes per hour</h2>
              <BarChart title="Audit-log changes, last 24 hours (UTC)" points={o.changesPerHour.map((h) => ({ label: h.hour.slice(11, 16), value: h.changes }))} />
            </section>
            <Curl method="GET" path="/api/security/overview" />
          </div>
        </div>
      )}
    </Page>
  );
}

function CheckItem(props: { c: Schemas["Check"] }) {
  const { c } = props;
  const where = fixedAt[c.id];
  return (
    <li>
      <div class="row spread">
        <strong>{c.title}</strong>
        <span>
          <Badge state={c.status} />
          {c.scored && c.weight !== undefined && (
            <span class="muted small">
              {" "}
              {c.points ?? 0}/{c.weight}
            </span>
          )}
        </span>
      </div>
      <p class="small">{c.finding}</p>
      {c.fix && <p class="small muted">{c.fix}</p>}
      {where && c.status !== "unavailable" && (
        <p class="small">
          <a href={where[0]}>
            {c.status === "warn" || c.status === "fail" ? "Fix it" : "Where it is set"}: {where[1]}
          </a>
        </p>
      )}
    </li>
  );
}

// The rules as the answer carries them at its top level.
type ShieldRules = { enabled: boolean; logOnly: boolean; blockAiCrawlers: boolean; blockedCountries: string[]; allowIps: string[]; denyIps: string[] };

function lines(s: string): string[] {
  return s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);
}

// Shield: the settings with the API's validation messages, site
// passwords, Apply now and what the rules caught.
export function Shield() {
  const can = useCan();
  const sh = useLoad(() => unwrap(api.GET("/api/services/shield")), []);
  const s = sh.data;
  return (
    <Page title="Shield">
      <Tabs tab="/security/shield" />
      <ErrorNote error={sh.error} />
      {!s && !sh.error && <Loading what="Shield" />}
      {s && (
        <div class="grid-2">
          <div>
            <ShieldSettings a={s} may={can("PUT", "/api/services/shield")} onSaved={sh.reload} />
            {s.passwordsAllowed && can("PUT", "/api/services/shield") && <SitePasswords a={s} onSaved={sh.reload} />}
          </div>
          <Caught />
        </div>
      )}
    </Page>
  );
}

function ShieldSettings(props: { a: Schemas["Answer"]; may: boolean; onSaved: () => Promise<void> }) {
  // The settings are embedded in the answer: their fields are at its top
  // level (the OpenAPI document nests them under Settings).
  const st = props.a as unknown as ShieldRules;
  const [enabled, setEnabled] = useState(st.enabled);
  const [logOnly, setLogOnly] = useState(st.logOnly);
  const [ai, setAi] = useState(st.blockAiCrawlers);
  const [countries, setCountries] = useState(st.blockedCountries.join(" "));
  const [allow, setAllow] = useState(st.allowIps.join("\n"));
  const [deny, setDeny] = useState(st.denyIps.join("\n"));
  const [note, setNote] = useState("");
  const body = () => ({ enabled, logOnly, blockAiCrawlers: ai, blockedCountries: lines(countries).map((c) => c.toUpperCase()), allowIps: lines(allow), denyIps: lines(deny) });
  const save = useAction(async () => {
    const out = await unwrap(api.PUT("/api/services/shield", { body: body() }));
    setNote(out.appliedNote ?? "Saved.");
    await props.onSaved();
  });
  const apply = useAction(async () => {
    const out = await unwrap(api.POST("/api/services/shield"));
    setNote(out.appliedNote);
  });
  return (
    <form
      class="card"
      aria-labelledby="shs-h"
      onSubmit={(e) => {
        e.preventDefault();
        save.run();
      }}
    >
      <h2 id="shs-h">Rules</h2>
      <fieldset disabled={!props.may} class="plain-fieldset">
        <legend class="visually-hidden">Shield rules</legend>
        <label class="check">
          <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Shield on
        </label>
        <label class="check">
          <input type="checkbox" name="logOnly" checked={logOnly} onChange={(e) => setLogOnly(e.currentTarget.checked)} /> Log only (count what would be refused)
        </label>
        <label class="check">
          <input type="checkbox" name="blockAiCrawlers" checked={ai} onChange={(e) => setAi(e.currentTarget.checked)} /> Refuse AI crawlers
        </label>
        <Field label="Blocked countries" name="blockedCountries" value={countries} onInput={(e) => setCountries(e.currentTarget.value)} hint="Two-letter codes separated by spaces, e.g. RU KP." />
        <div class="field">
          <label for="allowIps">Always allowed addresses</label>
          <textarea id="allowIps" name="allowIps" rows={3} class="mono" value={allow} onInput={(e) => setAllow(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="denyIps">Refused addresses</label>
          <textarea id="denyIps" name="denyIps" rows={3} class="mono" value={deny} onInput={(e) => setDeny(e.currentTarget.value)} aria-describedby="denyIps-hint" />
          <p class="hint" id="denyIps-hint">
            One address or CIDR range a line.
          </p>
        </div>
      </fieldset>
      <ErrorNote error={save.error ?? apply.error} />
      {note && (
        <p role="status" class="secret">
          {note}
        </p>
      )}
      {props.may ? (
        <div class="row">
          <button type="submit" disabled={save.busy}>
            Save rules
          </button>
          <button type="button" class="secondary" onClick={() => apply.run()} disabled={apply.busy}>
            Apply now
          </button>
        </div>
      ) : (
        <p class="note">Changing Shield needs an admin.</p>
      )}
      <p class="muted small">Protected sites: {props.a.protectedSites.length ? props.a.protectedSites.join(", ") : "none yet"}</p>
      <Curl method="PUT" path="/api/services/shield" body={body()} />
    </form>
  );
}

function SitePasswords(props: { a: Schemas["Answer"]; onSaved: () => Promise<void> }) {
  const [site, setSite] = useState("");
  const [password, setPassword] = useState("");
  const save = useAction(async (clear: boolean) => {
    await unwrap(api.PUT("/api/services/shield", { body: { passwords: { [site]: clear ? null : password } } }));
    setPassword("");
    await props.onSaved();
  });
  return (
    <form
      class="card"
      aria-labelledby="spw-h"
      onSubmit={(e) => {
        e.preventDefault();
        save.run(false);
      }}
    >
      <h2 id="spw-h">Site passwords</h2>
      <p class="muted small">A static site with a password asks every visitor for it.</p>
      <Field label="Site (project slug)" name="site" required value={site} onInput={(e) => setSite(e.currentTarget.value)} />
      <Field label="Password" name="sitePassword" type="password" autocomplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      <ErrorNote error={save.error} />
      <div class="row">
        <button type="submit" disabled={save.busy || !password}>
          Set password
        </button>
        <button type="button" class="secondary" disabled={save.busy || !site} onClick={() => save.run(true)}>
          Remove password
        </button>
      </div>
    </form>
  );
}

function Caught() {
  const loc = useLocation();
  const days = loc.query.get("days") === "30" ? "30" : "7";
  const bl = useLoad(() => unwrap(api.GET("/api/services/shield/blocks", { params: { query: query({ days }) } })), [days]);
  useEvery(bl.reload, 5000);
  const b = bl.data;
  return (
    <section class="card" aria-labelledby="caught-h">
      <h2 id="caught-h">What the rules caught</h2>
      <form class="row" aria-label="Days" onSubmit={(e) => e.preventDefault()}>
        <Select label="Over" name="days" options={[["7", "7 days"], ["30", "30 days"]]} value={days} onChange={(e) => navigate(`/security/shield?days=${e.currentTarget.value}`, { replace: true })} />
      </form>
      <ErrorNote error={bl.error} />
      {b && (
        <>
          <dl class="stats">
            <div>
              <dt>Refused</dt>
              <dd>{b.refused}</dd>
            </div>
            <div>
              <dt>Would refuse (log only)</dt>
              <dd>{b.wouldRefuse}</dd>
            </div>
          </dl>
          <BarChart title="Refused a day" points={b.daily.map((d) => ({ label: d.day, value: d.refused + d.wouldRefuse }))} />
          {b.items.length > 0 && (
            <table>
              <caption class="visually-hidden">By site and rule</caption>
              <thead>
                <tr>
                  <th scope="col">Site</th>
                  <th scope="col">Rule</th>
                  <th scope="col">Refused</th>
                </tr>
              </thead>
              <tbody>
                {b.items.map((it, i) => (
                  <tr key={i}>
                    <td>
                      <a href={`/projects/${it.projectId}`}>{it.site}</a> <span class="muted small">{it.kind}</span>
                    </td>
                    <td>{it.rule}</td>
                    <td>
                      {it.refused}
                      {it.wouldRefuse > 0 && <span class="muted small"> (+{it.wouldRefuse} logged)</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p class="muted small">
            {b.note} Updated every 5 seconds while this page is open.
          </p>
        </>
      )}
    </section>
  );
}

// CDN: caching on or off and how long pages are kept.
export function CDN() {
  const can = useCan();
  const cdn = useLoad(() => unwrap(api.GET("/api/services/cdn")), []);
  return (
    <Page title="CDN">
      <Tabs tab="/security/cdn" />
      <ErrorNote error={cdn.error} />
      {!cdn.data && !cdn.error && <Loading what="CDN settings" />}
      {cdn.data && <CDNForm a={cdn.data} may={can("PUT", "/api/services/cdn")} onSaved={cdn.reload} />}
    </Page>
  );
}

function CDNForm(props: { a: Schemas["cdn.Answer"]; may: boolean; onSaved: () => Promise<void> }) {
  // The settings are embedded in the answer (see ShieldSettings).
  const st = props.a as unknown as { enabled: boolean; cacheTtlSeconds: number };
  const [enabled, setEnabled] = useState(st.enabled);
  const [ttl, setTtl] = useState(String(st.cacheTtlSeconds));
  const [note, setNote] = useState("");
  const body = () => ({ enabled, cacheTtlSeconds: Number(ttl) });
  const save = useAction(async () => {
    const out = await unwrap(api.PUT("/api/services/cdn", { body: body() }));
    setNote(out.note ?? "Saved.");
    await props.onSaved();
  });
  return (
    <form
      class="card narrow"
      aria-labelledby="cdn-h"
      onSubmit={(e) => {
        e.preventDefault();
        save.run();
      }}
    >
      <h2 id="cdn-h">Caching</h2>
      <fieldset disabled={!props.may} class="plain-fieldset">
        <legend class="visually-hidden">CDN settings</legend>
        <label class="check">
          <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} /> Cache pages at the edge
        </label>
        <Field label="Keep pages for (seconds)" name="cacheTtlSeconds" type="number" min={0} value={ttl} onInput={(e) => setTtl(e.currentTarget.value)} hint="Browsers and the edge keep a page this long; each project's next deploy takes the change." />
      </fieldset>
      <ErrorNote error={save.error} />
      {note && (
        <p role="status" class="secret">
          {note}
        </p>
      )}
      {props.may ? (
        <button type="submit" disabled={save.busy}>
          Save
        </button>
      ) : (
        <p class="note">Changing the CDN needs an admin.</p>
      )}
      <Curl method="PUT" path="/api/services/cdn" body={body()} />
    </form>
  );
}
