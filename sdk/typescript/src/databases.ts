import type { components } from "./generated/schema.js";
import { Platform, defaultClient, esc } from "./client.js";

export type QueryRequest = components["schemas"]["QuerySchema"];
export type QueryAnswer = components["schemas"]["QueryAnswerSchema"];
export type QueryMeta = components["schemas"]["Meta"];

/** A row of a query's results. */
export type Row = Record<string, unknown>;

/** A project database (SQL): `new Database(id).query("SELECT ...", [params])`. */
export class Database {
  readonly id: string;
  readonly #c: Platform;

  constructor(id: string, client: Platform = defaultClient()) {
    this.id = id;
    this.#c = client;
  }

  /** Runs one statement with positional parameters (?) and returns its rows. */
  async query<R extends Row = Row>(sql: string, params: unknown[] = []): Promise<{ results: R[]; meta: QueryMeta | undefined }> {
    const a = await this.#c.request<QueryAnswer>("POST", "/api/databases/" + esc(this.id), { json: { sql, params } satisfies QueryRequest });
    return { results: (a.results ?? []) as R[], meta: a.meta };
  }

  /** Runs statements in one transaction; one answer per statement. */
  async batch(statements: { sql: string; params?: unknown[] }[]): Promise<QueryAnswer> {
    return this.#c.request<QueryAnswer>("POST", "/api/databases/" + esc(this.id), { json: { batch: statements } satisfies QueryRequest });
  }
}
