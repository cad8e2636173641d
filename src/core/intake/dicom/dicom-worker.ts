import { withDecodeWorker } from "./decode-pool.js";

/** What the worker says about a parsed object (render-worker.mjs). */
export interface ParsedHeader {
  /** Only the attributes asked for, as plain strings and numbers (person names as their groups). */
  elements: Record<string, unknown>;
  hasPixelData: boolean;
  /** The object carries Float or Double Float Pixel Data (a parametric map) instead. */
  floatPixelData: "float" | "double" | null;
  pixelBytes: number;
  transferSyntaxUid: string;
  /** A whole-slide instance's tile positions (1-based column, row per frame), spacing and optics. */
  slide?: SlideHeader;
  /** Each frame's own VOI window (Frame VOI LUT functional group, else the top-level one): [center, width, 1 when from the functional groups]; null when no frame has one. */
  frameWindows: Array<[number, number, number] | null> | null;
  /** Where each frame sits (an enhanced object's Frame Content: stack, position, time point), for its caption; null when no frame says. */
  frameContents: Array<string | null> | null;
  /** What the worker could not apply as the standard says (shown in provenance). */
  warnings: string[];
}

export interface SlideHeader {
  positions: Array<[number, number]> | null;
  pixelSpacing: [number, number] | null;
  opticalPaths: Array<{ iccProfile: boolean; id?: string; description?: string; illumination?: string }>;
}

export interface RenderedFrame {
  width: number;
  height: number;
  /** RGBA, 8 bits per channel (or, for an item asking for `values`, uint16 stored values). */
  pixels: ArrayBuffer;
  /** The window the renderer used (for a greyscale frame), in modality units. */
  window: { center: number; width: number } | null;
}

export interface RenderItem {
  frame: number;
  window: { center: number; width: number } | null;
  /** A 16-bit greyscale frame's stored values (uint16 little endian in `pixels`) instead of RGBA. */
  values?: boolean;
}

/** A failure inside the worker: its message, and the frame it was rendering, if any. */
export class DicomWorkerError extends Error {
  constructor(
    message: string,
    readonly frame: number | undefined,
    readonly stage: "parse" | "render",
  ) {
    super(message);
  }
}

export interface ParsedDicom {
  header: ParsedHeader;
  /** Render frames; `more` keeps the object in the thread for another call (the last call omits it). */
  render(items: RenderItem[], more?: boolean): Promise<RenderedFrame[]>;
}

let nextId = 1;

/**
 * A DICOM object parsed by a thread of the decode pool, lent to `work` for this object only:
 * its header (just `attributes`) at once, its frames on request. The thread forgets the object
 * when the next one arrives; the pool's time limit covers all of `work`'s questions.
 */
export function withParsedDicom<T>(tenant: string, bytes: Buffer, attributes: readonly string[], work: (dicom: ParsedDicom) => Promise<T>, signal?: AbortSignal): Promise<T> {
  return withDecodeWorker(tenant, async (lease) => {
    const id = nextId++;
    const copy = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const r = await lease.ask({ id, op: "header", bytes: copy, attributes }, [copy]);
    if (!r.ok) throw new DicomWorkerError(r.error ?? "unreadable", undefined, "parse");
    const header = r as unknown as ParsedHeader;
    return work({
      header: {
        elements: header.elements,
        hasPixelData: header.hasPixelData,
        floatPixelData: header.floatPixelData ?? null,
        pixelBytes: header.pixelBytes,
        transferSyntaxUid: header.transferSyntaxUid,
        frameWindows: header.frameWindows ?? null,
        frameContents: header.frameContents ?? null,
        warnings: header.warnings ?? [],
        ...(header.slide ? { slide: header.slide } : {}),
      },
      async render(items, more) {
        const out = await lease.ask({ id, op: "render", items, ...(more ? { more: true } : {}) });
        if (!out.ok) throw new DicomWorkerError(out.error ?? "undecodable", typeof out.frame === "number" ? out.frame : undefined, "render");
        return out.frames as RenderedFrame[];
      },
    });
  }, signal);
}
