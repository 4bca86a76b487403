import { Page } from "../components/ui";

export function NotFound() {
  return (
    <Page title="No such page">
      <p>
        The dashboard has no page at <code>{location.pathname}</code> yet. Everything is reachable through the API: its description is
        at <a href="/api/openapi.json">/api/openapi.json</a>.
      </p>
      <p>
        <a href="/">Back to the projects</a>
      </p>
    </Page>
  );
}
