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

describe("each EHR against its own keys", () => {
  it("EHR A's key signing as EHR B is refused; each signing as itself is accepted, with its sub", async () => {
    const { generateKeyPair, exportJWK } = await import("jose");
    const a = await generateKeyPair("ES256");
    const b = await generateKeyPair("ES256");
    const jwksA = path.join(dir, "ehr-a.json");
    const jwksB = path.join(dir, "ehr-b.json");
    await writeFile(jwksA, JSON.stringify({ keys: [{ ...(await exportJWK(a.publicKey)), kid: "a-1", alg: "ES256" }] }));
    await writeFile(jwksB, JSON.stringify({ keys: [{ ...(await exportJWK(b.publicKey)), kid: "b-1", alg: "ES256" }] }));
    const used = new Set<string>();
    const two = new CdsJwtVerifier({
      issuerKeys: [
        { iss: "https://ehr-a.example", jwks: jwksA },
        { iss: "https://ehr-b.example", jwks: jwksB },
      ],
      usedTokenIds: { useTokenId: async (_iss: string, jti: string) => (used.has(jti) ? false : (used.add(jti), true)) } as never,
    });
    const sign = (key: CryptoKey, kid: string, iss: string) =>
      new SignJWT({}).setProtectedHeader({ alg: "ES256", kid, typ: "JWT" }).setIssuer(iss).setSubject("Practitioner/7").setAudience(AUD).setIssuedAt().setExpirationTime("2m").setJti(randomUUID()).sign(key);
    await expect(two.verify(await sign(a.privateKey, "a-1", "https://ehr-b.example"), AUD)).rejects.toThrow(/refused/);
    // Naming B's key id does not help: A's key is not in B's set.
    await expect(two.verify(await sign(a.privateKey, "b-1", "https://ehr-b.example"), AUD)).rejects.toThrow(/refused/);
    await expect(two.verify(await sign(a.privateKey, "a-1", "https://ehr-c.example"), AUD)).rejects.toThrow(/refused/);
    expect(await two.verify(await sign(a.privateKey, "a-1", "https://ehr-a.example"), AUD)).toMatchObject({ iss: "https://ehr-a.example", sub: "Practitioner/7" });
    expect(await two.verify(await sign(b.privateKey, "b-1", "https://ehr-b.example"), AUD)).toMatchObject({ iss: "https://ehr-b.example" });
  });
});
