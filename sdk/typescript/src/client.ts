import type { components } from "./generated/schema.js";

/** The API's error answer: `{"error": {"code", "message"}}`. */
export type ErrorBody = components["schemas"]["Error"];

/** Options of a Platform client. */
export interface PlatformOptions {
  /**
   * The API's address, e.g. "http://127.0.0.1:7070". Default: the
   * PLATFORM_API_URL (or SERVICE_API_URL) variable a deployment gets.
   */
  apiUrl?: string;
  /** The API key. Default: the PLATFORM_TOKEN variable a deployment gets. */
  token?: string;
  /** The project the calls act on. Default: SERVICE_PROJECT_ID. */
  projectId?: string;
  /** The fetch to use (default: the global fetch). */
  fetch?: typeof fetch;
}

/** A refusal of the API, with its HTTP status and stable code. */
export class PlatformError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "PlatformError";
    this.status = status;
    this.code = code;
  }
}

/** The value of an environment variable, or undefined outside Node. */
function envVar(name: string): string | undefined {
  const proc = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = proc?.env?.[name];
  return v === "" ? undefined : v;
}

/** A request of Platform.request. */
export interface RequestOptions {
  /** Marshalled as the JSON body. */
  json?: unknown;
  /** Sent as it is (with contentType). */
  body?: BodyInit;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  /** Answer 404 with undefined instead of throwing. */
  allow404?: boolean;
}

/**
 * Platform calls the REST API with one key. Inside a deployment of an app
 * or worker program `new Platform()` needs no arguments: the platform
 * gives it PLATFORM_API_URL, PLATFORM_TOKEN (a key limited to its project)
 * and SERVICE_PROJECT_ID.
 */
export class Platform {
  readonly apiUrl: string;
  readonly projectId: string | undefined;
  readonly #token: string;
  readonly #fetch: typeof fetch;

  constructor(opts: PlatformOptions = {}) {
    const url = opts.apiUrl ?? envVar("PLATFORM_API_URL") ?? envVar("SERVICE_API_URL");
    const token = opts.token ?? envVar("PLATFORM_TOKEN");
    if (!url) {
      throw new Error("platform: no API address: pass apiUrl, or set PLATFORM_API_URL (deployments get it)");
    }
    if (!token) {
      throw new Error("platform: no key: pass token, or set PLATFORM_TOKEN (deployments get it)");
    }
    this.apiUrl = url.replace(/\/+$/, "").replace(/\/api$/, "");
    this.#token = token;
    this.projectId = opts.projectId ?? envVar("SERVICE_PROJECT_ID");
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The project calls act on; throws when none is known. */
  project(): string {
    if (!this.projectId) {
      throw new Error("platform: no project: pass projectId, or set SERVICE_PROJECT_ID (deployments get it)");
    }
    return this.projectId;
  }

  /** request sends one call and returns the raw answer (2xx). */
  async raw(method: string, path: string, o: RequestOptions = {}): Promise<Response | undefined> {
    let url = this.apiUrl + path;
    if (o.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(o.query)) {
        if (v !== undefined) q.set(k, String(v));
      }
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const headers: Record<string, string> = { Authorization: "Bearer " + this.#token, Accept: "application/json", ...o.headers };
    let body: BodyInit | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["Content-Type"] = "application/json";
    } else if (o.contentType) {
      headers["Content-Type"] = o.contentType;
    }
    const res = await this.#fetch(url, { method, headers, body });
    if (res.status === 404 && o.allow404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) {
      const text = await res.text();
      let code = "http_" + res.status;
      let message = text || res.statusText;
      try {
        const e = JSON.parse(text) as ErrorBody;
        code = e.error?.code || code;
        message = e.error?.message || message;
      } catch {
        // not the API's JSON error shape
      }
      throw new PlatformError(res.status, code, message);
    }
    return res;
  }

  /** request sends one call and decodes its JSON answer. */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, path, o);
    if (!res) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

/** esc escapes one path segment; a key's slashes are kept with keepSlash. */
export function esc(s: string, keepSlash = false): string {
  const e = encodeURIComponent(s);
  return keepSlash ? e.replace(/%2F/g, "/") : e;
}

let shared: Platform | undefined;

/** The client built from the environment, made once. */
export function defaultClient(): Platform {
  shared ??= new Platform();
  return shared;
}
