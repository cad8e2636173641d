import { MedmmvError } from "../../core/contracts/errors.js";

/** A failed listen(), told as what to change (PORT, HOST or the other process). */
export function explainListenError(err: unknown, host: string, port: number): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  const at = `${host}:${port}`;
  switch (code) {
    case "EADDRINUSE":
      return new MedmmvError("CONFIG_INVALID", `port ${port} on ${host} is already in use (another medmmv serve, or another program): stop that process, or set PORT to a free port (PORT=0 picks one)`, { cause: err });
    case "EACCES":
      return new MedmmvError("CONFIG_INVALID", `this user may not listen on ${at} (ports below 1024 need privileges): set PORT to 1024 or above, e.g. PORT=8787`, { cause: err });
    case "EADDRNOTAVAIL":
      return new MedmmvError("CONFIG_INVALID", `HOST=${host} is not an address of this machine: set HOST to one of its addresses, 127.0.0.1 for this machine only, or 0.0.0.0 for all (with MEDMMV_API_KEYS)`, { cause: err });
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new MedmmvError("CONFIG_INVALID", `HOST=${host} does not resolve to an address: set HOST to an IP address such as 127.0.0.1`, { cause: err });
    default:
      return err;
  }
}
