/**
 * The platform's TypeScript SDK: a typed client of the REST API. Inside a
 * deployed app or worker program it needs no configuration: the platform
 * gives the program PLATFORM_API_URL, PLATFORM_TOKEN (a key limited to its
 * project, revoked when the deployment is replaced) and SERVICE_PROJECT_ID.
 *
 *     import { Database } from "@svcplatform/sdk";
 *     const { results } = await new Database("db_...").query("SELECT 1 AS one");
 */
export { Platform, PlatformError, defaultClient } from "./client.js";
export type { PlatformOptions, RequestOptions } from "./client.js";
export { Database } from "./databases.js";
export type { QueryAnswer, QueryMeta, Row } from "./databases.js";
export { MemoryStore } from "./memory.js";
export type { Written, KeyPage } from "./memory.js";
export { VectorIndex } from "./vectors.js";
export type { Vector, VectorQuery, VectorMatches } from "./vectors.js";
export { Bucket } from "./buckets.js";
export type { StoredObject, ObjectPage } from "./buckets.js";
export { Mail } from "./mail.js";
export type { SendRequest, Email } from "./mail.js";
export { AI } from "./ai.js";
export type { ChatAnswer, ChatMessage, ChatOptions } from "./ai.js";
export type { components, paths } from "./generated/schema.js";
