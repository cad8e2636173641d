import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, vi } from "vitest";
import { forgetVertexCredentials } from "../../src/core/llm/vertex-chat-model.js";
import { startScriptedTlsFront, type ScriptedTlsFront } from "../../src/scripted/scripted-tls-front.js";
import type { ScriptedVendorRoutes } from "../../src/scripted/scripted-vendor-routes.js";

/**
 * What a Vertex AI test needs around the scripted server: a TLS certificate for 127.0.0.1
 * (ChatVertexAI builds https:// URLs only) trusted by this test process alone, and an
 * Application Default Credentials file of the kind a hospital's workload outside Google Cloud
 * uses — workload identity federation (`external_account`): an OIDC token its platform writes
 * to a file (AKS, EKS, an on-premises issuer), exchanged at the token URL for a Google access
 * token. GOOGLE_APPLICATION_CREDENTIALS names the file, as on a real host.
 */
export interface VertexAdc {
  cert: string;
  key: string;
  /** Writes the ADC file with its token URL on `origin`; returns its path. */
  writeCredentials(origin: string): string;
  /** The subject token the platform "issued" (what the STS exchange must carry). */
  subjectToken: string;
  audience: string;
  /** Stops trusting the certificate and removes the files. */
  dispose(): void;
}

export const WIF_AUDIENCE = "//iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/hospital-pool/providers/aks-oidc";

export function vertexAdc(): VertexAdc {
  const dir = mkdtempSync(path.join(tmpdir(), "medmmv-vertex-"));
  const keyPath = path.join(dir, "key.pem");
  const certPath = path.join(dir, "cert.pem");
  // A self-signed certificate for the loopback address, made by the openssl CLI (node:crypto makes keys, not X.509 certificates).
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", keyPath, "-out", certPath],
    { stdio: "ignore" },
  );
  const cert = readFileSync(certPath, "utf8");
  const key = readFileSync(keyPath, "utf8");
  // google-auth-library's gaxios sends through node-fetch, which uses https.globalAgent: trusting the
  // certificate there is this process's NODE_EXTRA_CA_CERTS, without a new process.
  const previousCa = https.globalAgent.options.ca;
  https.globalAgent.options.ca = [cert];
  const subjectToken = "eyJhbGciOiJSUzI1NiJ9.scripted-oidc-token-of-the-workload.signature";
  const tokenFile = path.join(dir, "oidc-token");
  writeFileSync(tokenFile, subjectToken);
  return {
    cert,
    key,
    subjectToken,
    audience: WIF_AUDIENCE,
    writeCredentials(origin: string) {
      const file = path.join(dir, "application_default_credentials.json");
      writeFileSync(
        file,
        JSON.stringify({
          type: "external_account",
          audience: WIF_AUDIENCE,
          subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
          token_url: `${origin}/v1/token`,
          credential_source: { file: tokenFile, format: { type: "text" } },
        }),
      );
      return file;
    },
    dispose() {
      // The files of a worker share this process (isolate: false): the agent is left as it was found.
      if (previousCa === undefined) delete https.globalAgent.options.ca;
      else https.globalAgent.options.ca = previousCa;
      // Connections the client kept alive were made trusting the certificate: none is reused after.
      https.globalAgent.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A file's Vertex AI fixture: the scripted routes behind a TLS front with a trusted certificate
 * for the file, and before each test the ADC file named in GOOGLE_APPLICATION_CREDENTIALS and no
 * token in hand (as a fresh process starts). `extraEnv`: more of the host's environment for
 * every test (a Gemini API key that must not divert the calls, say). Call inside a describe to
 * scope it there.
 */
export function useVertexFront(vendors: () => ScriptedVendorRoutes, extraEnv: Record<string, string> = {}): { readonly front: ScriptedTlsFront; readonly adc: VertexAdc } {
  let adc: VertexAdc | undefined;
  let front: ScriptedTlsFront | undefined;
  beforeAll(async () => {
    adc = vertexAdc();
    front = await startScriptedTlsFront(vendors(), { key: adc.key, cert: adc.cert });
  });
  afterAll(async () => {
    await front?.close();
    adc?.dispose();
  });
  beforeEach(() => {
    vi.stubEnv("GOOGLE_APPLICATION_CREDENTIALS", adc!.writeCredentials(front!.origin));
    for (const [k, v] of Object.entries(extraEnv)) vi.stubEnv(k, v);
    forgetVertexCredentials();
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });
  return {
    get front() {
      return front!;
    },
    get adc() {
      return adc!;
    },
  };
}
