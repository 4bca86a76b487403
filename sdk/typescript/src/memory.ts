import type { components } from "./generated/schema.js";
import { Platform, defaultClient, esc } from "./client.js";

export type Written = components["schemas"]["Written"];
export type KeyPage = components["schemas"]["KeyPage"];

/** A memory store (keys to bytes with an optional time to live). */
export class MemoryStore {
  readonly id: string;
  readonly #c: Platform;

  constructor(id: string, client: Platform = defaultClient()) {
    this.id = id;
    this.#c = client;
  }

  #path(key: string): string {
    return "/api/memory/" + esc(this.id) + "/keys/" + esc(key, true);
  }

  /** Stores value (text, bytes or, with json, any JSON value) under key. */
  async set(key: string, value: string | Uint8Array, opts: { ttlSeconds?: number } = {}): Promise<Written> {
    return this.#c.request<Written>("PUT", this.#path(key), {
      body: value as BodyInit, contentType: "application/octet-stream", query: { ttlSeconds: opts.ttlSeconds },
    });
  }

  /** Stores a JSON value. */
  async setJSON(key: string, value: unknown, opts: { ttlSeconds?: number } = {}): Promise<Written> {
    return this.set(key, JSON.stringify(value), opts);
  }

  /** The bytes under key, or undefined when there is none. */
  async get(key: string): Promise<Uint8Array | undefined> {
    const res = await this.#c.raw("GET", this.#path(key), { allow404: true });
    return res ? new Uint8Array(await res.arrayBuffer()) : undefined;
  }

  /** The text under key, or undefined. */
  async getText(key: string): Promise<string | undefined> {
    const b = await this.get(key);
    return b === undefined ? undefined : new TextDecoder().decode(b);
  }

  /** The JSON value under key, or undefined. */
  async getJSON<T = unknown>(key: string): Promise<T | undefined> {
    const t = await this.getText(key);
    return t === undefined ? undefined : (JSON.parse(t) as T);
  }

  /** Removes key (no error when absent). */
  async delete(key: string): Promise<void> {
    await this.#c.raw("DELETE", this.#path(key), { allow404: true });
  }

  /** A page of keys, optionally under a prefix. */
  async list(opts: { prefix?: string; limit?: number; cursor?: string } = {}): Promise<KeyPage> {
    return this.#c.request<KeyPage>("GET", "/api/memory/" + esc(this.id) + "/keys", { query: opts });
  }
}
