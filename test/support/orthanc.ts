/**
 * A real PACS for the DICOMweb tests: Debian's Orthanc with its DICOMweb plugin, on free
 * loopback ports, with a throwaway storage folder and its own JSON configuration.
 * `.ci/run` installs the packages (orthanc, orthanc-dicomweb).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { tmpdir } from "node:os";
import path from "node:path";
import { closedPort } from "./closed-port.js";
import { until } from "./until.js";

const ORTHANC = ["/usr/sbin/Orthanc", "/usr/bin/Orthanc"].find((p) => existsSync(p));
const PLUGIN = ["/usr/share/orthanc/plugins/libOrthancDicomWeb.so", "/usr/lib/orthanc/libOrthancDicomWeb.so.1.7"].find((p) => existsSync(p));

const DICOMIZER = ["/usr/bin/OrthancWSIDicomizer"].find((p) => existsSync(p));

/** A missing tool skips a test here, never in CI: .ci/run installs it, and a silent skip there would hide the check. */
function unlessCi(missing: string | null): string | null {
  if (missing !== null && process.env.CI) throw new Error(missing);
  return missing;
}

export function dicomizerMissing(): string | null {
  return unlessCi(DICOMIZER ? null : "OrthancWSIDicomizer is not installed (apt-get install orthanc-wsi; .ci/run does)");
}

/**
 * A tiled pyramidal TIFF as a VL Whole Slide Microscopy series, by Debian's OrthancWSIDicomizer
 * (its tiles are reused as they are: JPEG tiles stay JPEG, unless `options` ask for
 * another compression with --reencode), one Part 10 object per level.
 */
export async function dicomizeTiff(tiff: string, options: readonly string[] = []): Promise<Buffer[]> {
  const missing = dicomizerMissing();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(path.join(tmpdir(), "medmmv-wsi-"));
  try {
    await promisify(execFile)(DICOMIZER!, ["--folder", dir, ...options, tiff], { timeout: 120_000 });
    const files = (await readdir(dir)).sort();
    return await Promise.all(files.map((f) => readFile(path.join(dir, f))));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface OrthancServer {
  /** The DICOMweb root, e.g. http://127.0.0.1:41234/dicom-web */
  dicomweb: string;
  /** Stores one Part 10 object through Orthanc's REST API. */
  store(file: Buffer): Promise<void>;
  close(): Promise<void>;
}

export function orthancMissing(): string | null {
  if (!ORTHANC) return unlessCi("Orthanc is not installed (apt-get install orthanc orthanc-dicomweb; .ci/run does)");
  if (!PLUGIN) return unlessCi("the Orthanc DICOMweb plugin is not installed (apt-get install orthanc-dicomweb)");
  return null;
}

export async function startOrthanc(): Promise<OrthancServer> {
  const missing = orthancMissing();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(path.join(tmpdir(), "medmmv-orthanc-"));
  const [httpPort, dicomPort] = [await closedPort(), await closedPort()];
  const config = {
    Name: "medmmv-test",
    StorageDirectory: path.join(dir, "storage"),
    IndexDirectory: path.join(dir, "index"),
    HttpPort: httpPort,
    DicomPort: dicomPort,
    RemoteAccessAllowed: false,
    AuthenticationEnabled: false,
    Plugins: [PLUGIN],
    DicomWeb: { Enable: true, Root: "/dicom-web/", EnableWado: false, Ssl: false },
  };
  const file = path.join(dir, "orthanc.json");
  await writeFile(file, JSON.stringify(config));
  const proc: ChildProcess = spawn(ORTHANC!, [file], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr!.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const base = `http://127.0.0.1:${httpPort}`;
  try {
    await until(async () => {
      if (proc.exitCode !== null) throw new Error(`Orthanc exited (${proc.exitCode}): ${stderr}`);
      const ok = await fetch(`${base}/dicom-web/studies`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
      return ok ? true : undefined;
    }, 60_000, "Orthanc's DICOMweb root to answer");
  } catch (e) {
    proc.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    dicomweb: `${base}/dicom-web`,
    async store(dicom) {
      const res = await fetch(`${base}/instances`, { method: "POST", body: new Uint8Array(dicom), headers: { "content-type": "application/dicom" } });
      if (!res.ok) throw new Error(`Orthanc refused an instance: ${res.status} ${await res.text()}`);
    },
    async close() {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
