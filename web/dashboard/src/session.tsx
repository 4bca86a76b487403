// The signed-in member, read from the API (GET /api/session and
// GET /api/workspace); pages read the role from here.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Schemas } from "./api/client";
import { can as canRole, type Method } from "./api/perms";
import type { Paths } from "./api/client";

export type Session = {
  member: Schemas["Member"];
  workspace: Schemas["Workspace"];
  role: string;
};

export type SessionState = {
  session: Session;
  refresh: () => Promise<void>;
  signOut: () => Promise<void>;
};

export const SessionContext = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside a signed-in page");
  return s;
}

// useCan answers whether the signed-in member may make a call.
export function useCan(): (method: Method, path: keyof Paths) => boolean {
  const { session } = useSession();
  return (method, path) => canRole(session.role, method, path);
}
