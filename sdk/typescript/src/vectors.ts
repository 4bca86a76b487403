import type { components } from "./generated/schema.js";
import { Platform, defaultClient, esc } from "./client.js";

export type Vector = components["schemas"]["VectorSchema"];
export type VectorQuery = components["schemas"]["vectors.QuerySchema"];
export type VectorMatches = components["schemas"]["QueryAnswer"];
export type MutationAnswer = components["schemas"]["MutationAnswer"];

/** A vector index: upsert vectors (or texts to embed) and query the nearest. */
export class VectorIndex {
  readonly id: string;
  readonly #c: Platform;

  constructor(id: string, client: Platform = defaultClient()) {
    this.id = id;
    this.#c = client;
  }

  /** Inserts or replaces vectors by id. */
  async upsert(vectors: Vector[]): Promise<MutationAnswer> {
    return this.#c.request<MutationAnswer>("POST", "/api/vectors/" + esc(this.id) + "/upsert", { json: { vectors } });
  }

  /** The topK nearest vectors to a vector or a text. */
  async query(q: VectorQuery): Promise<VectorMatches> {
    return this.#c.request<VectorMatches>("POST", "/api/vectors/" + esc(this.id) + "/query", { json: q });
  }
}
