// What the signed-in member may do, from the server's own permission table
// (controlplane/auth/perms.go, written out at build time). A page offers
// only what this allows; the server still decides every call.
import table from "./generated/permissions.json";
import type { Paths } from "./client";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

type Rule = { minRole: string; write: boolean; ownerSession: boolean; sessionOnly: boolean };

const ops = table.ops as Record<string, Rule>;
const routes = table.routes as Record<string, string>;

export function rank(role: string | undefined): number {
  return role ? table.roles.indexOf(role) : -1;
}

// can reports whether a member of role, signed in to the dashboard, may
// call method path (a path of the OpenAPI document, so a route that goes
// away breaks the build).
export function can(role: string | undefined, method: Method, path: keyof Paths): boolean {
  const op = routes[`${method} ${path}`];
  if (!op) return true; // public
  const rule = ops[op];
  if (!rule || rank(role) < 0) return false;
  if (rule.ownerSession && role !== "owner") return false;
  return rank(role) >= rank(rule.minRole);
}

// roles lists the role names, lowest first.
export const roles: readonly string[] = table.roles;

// canOp reports whether a member of role, signed in to the dashboard, may
// do an operation the server checks inside a route (refunds and payouts:
// the owner signed in).
export function canOp(role: string | undefined, op: string): boolean {
  const rule = ops[op];
  if (!rule || rank(role) < 0) return false;
  if (rule.ownerSession && role !== "owner") return false;
  return rank(role) >= rank(rule.minRole);
}
