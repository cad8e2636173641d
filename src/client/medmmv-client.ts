import createClient, { type Client } from "openapi-fetch";
import type { paths } from "./openapi-types.js";

export type MedmmvClient = Client<paths>;

/**
 * A typed client for the medmmv REST API, generated from its OpenAPI document
 * (openapi-typescript types, openapi-fetch calls): `client.POST("/diagnose", { body })`.
 */
export function createMedmmvClient(baseUrl: string, apiKey?: string): MedmmvClient {
  return createClient<paths>({ baseUrl, headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
}
