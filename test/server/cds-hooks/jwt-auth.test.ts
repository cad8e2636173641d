import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CdsJwtVerifier } from "../../../src/server/cds-hooks/jwt-auth.js";

const ISS = "https://ehr.example.org";
const AUD = "https://medmmv.example.org/cds-services/medmmv-diagnosis";
/** A shared secret put in the JWKS by mistake: 2.0.1 forbids symmetric signatures whatever the JWKS holds. */
const SECRET = Buffer.from("a-shared-secret-that-is-long-enough-for-hs256!!");

let dir: string;
let verifier: CdsJwtVerifier;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "medmmv-jwt-"));
  const jwks = path.join(dir, "jwks.json");
  await writeFile(jwks, JSON.stringify({ keys: [{ kty: "oct", k: SECRET.toString("base64url"), kid: "shared", alg: "HS256" }] }));
  const used = new Set<string>();
  verifier = new CdsJwtVerifier({ issuerKeys: [{ iss: ISS, jwks }], usedTokenIds: { useTokenId: async (_iss: string, jti: string) => (used.has(jti) ? false : (used.add(jti), true)) } as never });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("CdsJwtVerifier", () => {
  // A guard (jose already finds no usable key for it): the allowed algorithms say so explicitly.
  it("refuses an HMAC-signed token even when its key is in the JWKS", async () => {
    const token = await new SignJWT({}).setProtectedHeader({ alg: "HS256", kid: "shared", typ: "JWT" }).setIssuer(ISS).setAudience(AUD).setIssuedAt().setExpirationTime("2m").setJti(randomUUID()).sign(SECRET);
    await expect(verifier.verify(token, AUD)).rejects.toThrow(/the CDS Hooks JWT was refused/);
  });
});
