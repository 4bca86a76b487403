import { api, unwrap } from "../api/client";
import { navigate } from "../router";
import { useSession } from "../session";
import { ErrorNote } from "./ui";
import { useAction, useLoad } from "./load";

// WorkspaceSwitcher, in the shell: the member's workspaces; choosing one
// makes the session act in it and reloads what the app knows.
export function WorkspaceSwitcher() {
  const { session, refresh } = useSession();
  const list = useLoad(() => unwrap(api.GET("/api/workspaces")), [session.workspace.id]);
  const sw = useAction(async (workspaceId: string) => {
    await unwrap(api.POST("/api/session/workspace", { body: { workspaceId } }));
    await refresh();
    navigate("/");
  });
  const ws = list.data?.workspaces ?? [];
  if (ws.length < 2) return null;
  return (
    <form class="switcher" aria-label="Switch workspace" onSubmit={(e) => e.preventDefault()}>
      <label for="ws-switch" class="visually-hidden">
        Workspace
      </label>
      <select id="ws-switch" name="workspace" value={session.workspace.id} disabled={sw.busy} onChange={(e) => sw.run(e.currentTarget.value)}>
        {ws.map((m) => (
          <option key={m.workspace.id} value={m.workspace.id}>
            {m.workspace.name} ({m.role})
          </option>
        ))}
      </select>
      <ErrorNote error={sw.error} />
    </form>
  );
}
