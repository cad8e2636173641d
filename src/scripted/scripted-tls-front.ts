/**
 * An HTTPS listener in front of a scripted server's vendor routes (scripted-vendor-routes.ts),
 * for clients that build only https:// URLs: @langchain/google-vertexai takes a host for its
 * endpoint, never a scheme, as Vertex AI and its Private Service Connect endpoints are served
 * over TLS alone. The routes are the same objects the plain-HTTP server answers with, so their
 * call logs, scenario and faults are shared. The certificate is the caller's (a test makes a
 * self-signed one and trusts it in its own process).
 */
import https from "node:https";
import type { AddressInfo } from "node:net";
import type { ScriptedVendorRoutes } from "./scripted-vendor-routes.js";
import { writeJson } from "./vendor-relay.js";

export interface ScriptedTlsFront {
  /** `127.0.0.1:<port>`: what a client that takes a host (an endpoint without a scheme) is given. */
  host: string;
  /** `https://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

export async function startScriptedTlsFront(routes: ScriptedVendorRoutes, tls: { key: string; cert: string }): Promise<ScriptedTlsFront> {
  const server = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const path = new URL(req.url ?? "/", "https://scripted.invalid").pathname.replace(/\/+$/, "");
    void routes.handle(req, res, path).then((answered) => {
      if (answered) return;
      req.resume();
      writeJson(res, 404, { error: { code: 404, message: `unknown route ${req.method ?? ""} ${path}`, status: "NOT_FOUND" } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    origin: `https://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        // Keep-alive connections of the client would hold close() open.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
