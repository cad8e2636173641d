import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { MedmmvError } from "../../core/contracts/errors.js";

const UNWRITABLE = new Set(["EACCES", "EPERM", "EROFS"]);

/**
 * The directory the demo writes into, made if missing and proven writable by writing to it,
 * before any case runs: an unwritable one (a container's volume owned by another user, a
 * read-only filesystem) is a message that says which directory, why, and what to do, never
 * a raw EACCES from deep inside a write.
 */
export async function ensureWritableDir(dir: string, what: string): Promise<string> {
  const abs = path.resolve(dir);
  const probe = path.join(abs, `.medmmv-write-probe-${process.pid}`);
  try {
    await mkdir(abs, { recursive: true });
    await writeFile(probe, "");
    await rm(probe, { force: true });
    return abs;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "";
    if (!UNWRITABLE.has(code)) throw err;
    const uid = typeof process.getuid === "function" ? process.getuid() : null;
    const gid = typeof process.getgid === "function" ? process.getgid() : null;
    throw new MedmmvError(
      "CONFIG_INVALID",
      `cannot write ${what} to ${abs} (${code === "EROFS" ? "a read-only filesystem" : "permission denied"}${uid !== null ? ` for uid ${uid}, gid ${gid}` : ""}). ` +
        `Give this user a writable directory: in a container, mount a volume there (docker run -v medmmv-data:/data …; the image's /data is writable by its user and by group 0), ` +
        `or chown/chmod the directory on the host, or pass --out with a path in a writable directory`,
    );
  }
}
