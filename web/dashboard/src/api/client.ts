// The one way pages reach the server: a typed client of the public REST
// API, generated from the control plane's own OpenAPI document.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./generated/schema";

export type Schemas = components["schemas"];
export type Paths = paths;

const csrfKey = "platform.csrf";

// The CSRF token of the signed-in session: sign-in answers it once, every
// unsafe call sends it as X-CSRF-Token next to the HttpOnly cookie. It is
// kept in localStorage so that a reload or a second tab of this origin can
// still make changes; it is worth nothing without the cookie.
export const csrf = {
  get: (): string => localStorage.getItem(csrfKey) ?? "",
  set: (v: string) => localStorage.setItem(csrfKey, v),
  clear: () => localStorage.removeItem(csrfKey),
};

// An answer the API refused, with its stable code and message.
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

let sessionEnded: (() => void) | undefined;

// onSessionEnded is called when a signed-in call answers 401 (the session
// expired or was ended elsewhere).
export function onSessionEnded(fn: () => void) {
  sessionEnded = fn;
}

const publicCalls = new Set(["/api/session", "/api/members/accept"]);

const middleware: Middleware = {
  onRequest({ request }) {
    if (request.method !== "GET" && request.method !== "HEAD") {
      const token = csrf.get();
      if (token) request.headers.set("X-CSRF-Token", token);
    }
    return request;
  },
  onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    if (response.status === 401 && !publicCalls.has(path)) sessionEnded?.();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin, credentials: "same-origin" });
api.use(middleware);

type Answer<T> = { data?: T; error?: unknown; response: Response };

// unwrap returns the data of a successful answer and throws ApiError for
// any other.
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const e = (error as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(response.status, e?.code ?? `http_${response.status}`, e?.message ?? response.statusText, error);
  }
  return data as T;
}

// message says what went wrong for a person.
export function message(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return `The API could not be reached: ${err.message}`;
  return String(err);
}

// query passes query parameters the OpenAPI document names only in a
// route's summary (such as ?period= or ?cursor=): empty values are left
// out.
export function query(o: Record<string, string | number | boolean | undefined | null>): never {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== "") out[k] = String(v);
  return out as never;
}
