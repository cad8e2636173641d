import { expect } from "vitest";
import { json } from "./http-harness.js";

export interface ErrorResponse {
  statusCode: number;
  code: string;
  message: string;
  requestId: string;
  issues?: { path: string; message: string }[];
  details?: Record<string, unknown>;
}

/** The error body every route answers with: its status, code, the request id echoed in x-request-id, and the message. */
export async function expectError(res: Response, status: number, code: string, message?: RegExp): Promise<ErrorResponse> {
  expect(res.status).toBe(status);
  const body = await json<ErrorResponse>(res);
  expect(body).toMatchObject({ statusCode: status, code });
  expect(body.requestId).toBe(res.headers.get("x-request-id"));
  if (message) expect(body.message).toMatch(message);
  return body;
}
