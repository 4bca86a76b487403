import type { components } from "./generated/schema.js";
import { Platform, defaultClient, esc } from "./client.js";

export type SendRequest = components["schemas"]["SendRequest"];
export type Email = components["schemas"]["Email"];

/** The project's transactional mail. */
export class Mail {
  readonly #c: Platform;

  constructor(client: Platform = defaultClient()) {
    this.#c = client;
  }

  /** Sends one message; idempotencyKey makes a retry send it once. */
  async send(msg: SendRequest, opts: { idempotencyKey?: string } = {}): Promise<Email> {
    const headers: Record<string, string> = {};
    if (opts.idempotencyKey) headers["Idempotency-Key"] = opts.idempotencyKey;
    const a = await this.#c.request<{ email: Email }>("POST", "/api/projects/" + esc(this.#c.project()) + "/emails", { json: msg, headers });
    return a.email;
  }
}
