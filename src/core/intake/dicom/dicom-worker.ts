import { Worker } from "node:worker_threads";

/** What the worker says about a parsed object (render-worker.mjs). */
export interface ParsedHeader {
  elements: Record<string, unknown>;
  hasPixelData: boolean;
  pixelBytes: number;
  transferSyntaxUid: string;
}

export interface RenderedFrame {
  width: number;
  height: number;
  /** RGBA, 8 bits per channel. */
  pixels: ArrayBuffer;
  /** The window the renderer used (for a greyscale frame), in modality units. */
  window: { center: number; width: number } | null;
}

type Reply = { id: number; ok: boolean; error?: string; frame?: number } & Partial<ParsedHeader> & { frames?: RenderedFrame[] };

/** A failure inside the worker: its message, and the frame it was rendering, if any. */
export class DicomWorkerError extends Error {
  constructor(
    message: string,
    readonly frame: number | undefined,
  ) {
    super(message);
  }
}

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();

/**
 * One worker per process, started on first use. It keeps the process alive only while a
 * request waits on it: a "message" listener refs the worker's port (so a one-time unref
 * is undone and `medmmv diagnose` never exits), and an unref'd worker lets the process exit
 * mid-request with its reply unreceived.
 */
function theWorker(): Worker {
  if (worker) return worker;
  const w = new Worker(new URL("./render-worker.mjs", import.meta.url));
  w.on("message", (r: Reply) => {
    const p = pending.get(r.id);
    if (!p) return;
    pending.delete(r.id);
    if (pending.size === 0) w.unref();
    p.resolve(r);
  });
  const fail = (e: Error) => {
    worker = null; // the next object gets a fresh worker
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  };
  w.on("error", fail);
  w.on("exit", (code) => fail(new Error(`the DICOM worker exited (${code})`)));
  worker = w;
  return w;
}

function ask(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
  return new Promise((resolve, reject) => {
    pending.set(message.id as number, { resolve, reject });
    const w = theWorker();
    w.ref();
    w.postMessage(message, transfer);
  });
}

/**
 * A DICOM object parsed in the worker thread: its header comes back at once, its frames on
 * request, and nothing of it stays in the worker after `close()`.
 */
export async function openDicom(bytes: Buffer): Promise<{ header: ParsedHeader; render(items: Array<{ frame: number; window: { center: number; width: number } | null }>): Promise<RenderedFrame[]>; close(): void }> {
  const id = nextId++;
  const copy = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const r = await ask({ id, op: "header", bytes: copy }, [copy]);
  if (!r.ok) throw new DicomWorkerError(r.error ?? "unreadable", undefined);
  return {
    header: { elements: r.elements!, hasPixelData: r.hasPixelData!, pixelBytes: r.pixelBytes!, transferSyntaxUid: r.transferSyntaxUid! },
    async render(items) {
      const out = await ask({ id, op: "render", items });
      if (!out.ok) throw new DicomWorkerError(out.error ?? "undecodable", out.frame);
      return out.frames!;
    },
    close() {
      worker?.postMessage({ id, op: "drop" });
    },
  };
}
