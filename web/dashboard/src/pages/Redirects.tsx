import type { FunctionComponent } from "preact";
import { useEffect } from "preact/hooks";
import { api, unwrap } from "../api/client";
import { navigate, useParams, type Params } from "../router";
import { ErrorNote, Loading, Page } from "../components/ui";
import { useLoad } from "../components/load";

// Addresses the API's attention items and links name, kept working: each
// opens the page that has what they point at.

// redirect replaces the address with the page's own.
export function redirect(to: (p: Params) => string): FunctionComponent {
  return function Redirect() {
    const params = useParams();
    useEffect(() => {
      navigate(to(params) + location.search + location.hash, { replace: true });
    }, []);
    return <Loading />;
  };
}

// pickProject asks which project's service to open.
export function pickProject(tab: string, what: string): FunctionComponent {
  return function PickProject() {
    const projects = useLoad(() => unwrap(api.GET("/api/projects")), []);
    const list = projects.data?.projects ?? [];
    useEffect(() => {
      if (list.length === 1) navigate(`/projects/${list[0]!.id}/${tab}`, { replace: true });
    }, [list.length]);
    return (
      <Page title={what}>
        <p>{what} belong to projects. Which project?</p>
        <ErrorNote error={projects.error} />
        {!projects.data && !projects.error && <Loading what="projects" />}
        <ul class="plain">
          {list.map((p) => (
            <li key={p.id}>
              <a href={`/projects/${p.id}/${tab}`}>{p.name}</a>
            </li>
          ))}
        </ul>
      </Page>
    );
  };
}
