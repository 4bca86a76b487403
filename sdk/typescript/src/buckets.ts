import type { components } from "./generated/schema.js";
import { Platform, defaultClient, esc } from "./client.js";

export type StoredObject = components["schemas"]["Object"];
export type ObjectPage = components["schemas"]["ObjectPage"];

/** A storage bucket of the project. */
export class Bucket {
  readonly id: string;
  readonly #c: Platform;

  constructor(id: string, client: Platform = defaultClient()) {
    this.id = id;
    this.#c = client;
  }

  #path(key: string): string {
    return "/api/buckets/" + esc(this.id) + "/objects/" + esc(key, true);
  }

  /** Stores an object. */
  async put(key: string, body: string | Uint8Array, opts: { contentType?: string } = {}): Promise<StoredObject> {
    const a = await this.#c.request<{ object: StoredObject }>("PUT", this.#path(key), {
      body: body as BodyInit, contentType: opts.contentType ?? "application/octet-stream",
    });
    return a.object;
  }

  /** The object's bytes, or undefined when there is none. */
  async get(key: string): Promise<Uint8Array | undefined> {
    const res = await this.#c.raw("GET", this.#path(key), { allow404: true, headers: { Accept: "*/*" } });
    return res ? new Uint8Array(await res.arrayBuffer()) : undefined;
  }

  /** Removes an object (no error when absent). */
  async delete(key: string): Promise<void> {
    await this.#c.raw("DELETE", this.#path(key), { allow404: true });
  }

  /** A page of objects, optionally under a prefix. */
  async list(opts: { prefix?: string; limit?: number; cursor?: string } = {}): Promise<ObjectPage> {
    return this.#c.request<ObjectPage>("GET", "/api/buckets/" + esc(this.id) + "/objects", { query: opts });
  }
}
