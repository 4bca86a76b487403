import type { components } from "./generated/schema.js";
import { Platform, defaultClient } from "./client.js";

export type ChatAnswer = components["schemas"]["ai.Answer"];

/** A message of a conversation. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

/** A chat request: a prompt or messages, and the model or tier. */
export interface ChatOptions {
  prompt?: string;
  messages?: ChatMessage[];
  system?: string;
  model?: string;
  tier?: string;
  max_tokens?: number;
  temperature?: number;
}

/** The AI gateway, billed to the project. */
export class AI {
  readonly #c: Platform;

  constructor(client: Platform = defaultClient()) {
    this.#c = client;
  }

  /** One chat completion (not streamed). */
  async chat(o: ChatOptions): Promise<ChatAnswer> {
    return this.#c.request<ChatAnswer>("POST", "/api/ai/chat", { json: { ...o, projectId: this.#c.projectId, stream: false } });
  }
}
