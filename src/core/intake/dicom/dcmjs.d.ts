// dcmjs ships no types: the parts used here (its logging, its data dictionary, and the Part 10 reader and writer the tests use).
declare module "dcmjs" {
  interface Logger {
    setLevel(level: "silent" | "error" | "warn" | "info" | "debug" | "trace"): void;
  }
  const dcmjs: {
    log: Logger & { getLoggers(): Record<string, Logger> };
    data: {
      DicomMetaDictionary: {
        denaturalizeDataset(ds: Record<string, unknown>): Record<string, unknown>;
        /** Keyed "(GGGG,EEEE)"; `vr` is "ox" for OB or OW, "xs" for US or SS. */
        dictionary: Record<string, { vr?: string } | undefined>;
      };
      DicomDict: new (meta: Record<string, unknown>) => { dict: Record<string, unknown>; write(): ArrayBuffer };
      /** The Part 10 reader (tests relabel an attribute with it): elements keyed "GGGGEEEE". */
      DicomMessage: { readFile(buf: ArrayBuffer): { dict: Record<string, { vr?: string; Value: unknown[] } | undefined>; write(): ArrayBuffer } };
    };
  };
  export default dcmjs;
}
