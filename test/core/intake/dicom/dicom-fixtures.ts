/**
 * Synthetic DICOM Part 10 objects written with dcmjs: a CT with known Hounsfield units, a
 * 16-bit MR, a MONOCHROME1 radiograph, a multi-frame object, and an object whose every
 * PS3.15 basic-profile identifying attribute holds a planted canary. No real patient data.
 */
import dcmjs from "dcmjs";
import codecs from "dcmjs-codecs";

const { DicomMetaDictionary, DicomDict } = dcmjs.data;
// dcmjs's writer names every multi-typed VR it resolves ("xs - using US"); the fixtures know.
dcmjs.log.setLevel("silent");
for (const logger of Object.values(dcmjs.log.getLoggers())) logger.setLevel("silent");
export const EXPLICIT_LE = "1.2.840.10008.1.2.1";

export interface Spec {
  modality: string;
  rows: number;
  columns: number;
  frames?: number;
  /** Stored values, frame after frame (8-bit: one byte per sample, RGB interleaved when `rgb`). */
  stored: Int16Array | Uint16Array | Uint8Array;
  rgb?: boolean;
  signed?: boolean;
  photometric?: "MONOCHROME1" | "MONOCHROME2";
  slope?: number;
  intercept?: number;
  window?: { center: number; width: number };
  extra?: Record<string, unknown>;
  transferSyntax?: string;
}

export function dicomFile(s: Spec): Buffer {
  const sop = s.extra?.SOPInstanceUID ?? "2.25.1001";
  const meta = {
    FileMetaInformationVersion: new Uint8Array([0, 1]).buffer,
    MediaStorageSOPClassUID: "1.2.840.10008.5.1.4.1.1.7",
    MediaStorageSOPInstanceUID: sop,
    TransferSyntaxUID: s.transferSyntax ?? EXPLICIT_LE,
    ImplementationClassUID: "2.25.99",
  };
  const ds: Record<string, unknown> = {
    SOPClassUID: "1.2.840.10008.5.1.4.1.1.7",
    SOPInstanceUID: sop,
    StudyInstanceUID: "2.25.1",
    SeriesInstanceUID: "2.25.10",
    Modality: s.modality,
    Rows: s.rows,
    Columns: s.columns,
    ...(s.frames && s.frames > 1 ? { NumberOfFrames: String(s.frames) } : {}),
    BitsAllocated: s.stored.BYTES_PER_ELEMENT * 8,
    BitsStored: s.stored.BYTES_PER_ELEMENT * 8,
    HighBit: s.stored.BYTES_PER_ELEMENT * 8 - 1,
    PixelRepresentation: s.signed ? 1 : 0,
    SamplesPerPixel: s.rgb ? 3 : 1,
    ...(s.rgb ? { PlanarConfiguration: 0 } : {}),
    PhotometricInterpretation: s.rgb ? "RGB" : (s.photometric ?? "MONOCHROME2"),
    ...(s.slope !== undefined ? { RescaleSlope: String(s.slope), RescaleIntercept: String(s.intercept ?? 0) } : {}),
    ...(s.window ? { WindowCenter: String(s.window.center), WindowWidth: String(s.window.width) } : {}),
    ...s.extra,
    PixelData: [s.stored.buffer.slice(s.stored.byteOffset, s.stored.byteOffset + s.stored.byteLength)],
    _vrMap: { PixelData: s.stored.BYTES_PER_ELEMENT === 1 ? "OB" : "OW" },
  };
  const dict = new DicomDict(DicomMetaDictionary.denaturalizeDataset(meta));
  dict.dict = DicomMetaDictionary.denaturalizeDataset(ds);
  return Buffer.from(dict.write());
}

/** Lossless compressed transfer syntaxes dcmjs-codecs can write, and the lossy ones. */
export const LOSSLESS = { "RLE Lossless": "1.2.840.10008.1.2.5", "JPEG Lossless SV1": "1.2.840.10008.1.2.4.70", "JPEG-LS Lossless": "1.2.840.10008.1.2.4.80", "JPEG 2000 Lossless": "1.2.840.10008.1.2.4.90", "Explicit VR Big Endian": "1.2.840.10008.1.2.2" } as const;
export const LOSSY = { "JPEG-LS Near-Lossless": "1.2.840.10008.1.2.4.81", "JPEG 2000": "1.2.840.10008.1.2.4.91" } as const;
export const JPEG_BASELINE = "1.2.840.10008.1.2.4.50";

let codecsReady: Promise<void> | null = null;
/** The object re-encoded in another transfer syntax, by dcmjs-codecs' WASM encoders. */
export async function transcode(file: Buffer, transferSyntaxUid: string): Promise<Buffer> {
  codecsReady ??= codecs.NativeCodecs.initializeAsync();
  await codecsReady;
  const t = new codecs.Transcoder(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer);
  t.transcode(transferSyntaxUid);
  return Buffer.from(t.getDicomPart10());
}

/** The DICOM linear VOI function (PS3.3 C.11.2.1.2.1) to 8 bits: what a window must give. */
export function expectedGrey(value: number, center: number, width: number): number {
  if (value <= center - 0.5 - (width - 1) / 2) return 0;
  if (value > center - 0.5 + (width - 1) / 2) return 255;
  return ((value - (center - 0.5)) / (width - 1) + 0.5) * 255;
}

/** A CT of 32×32 whose Hounsfield units sweep −1100 … +1500 (stored with slope 1, intercept −1024). */
export function syntheticCt(window?: { center: number; width: number }, extra?: Record<string, unknown>): { file: Buffer; hu: number[] } {
  const hu = Array.from({ length: 32 * 32 }, (_, i) => -1100 + Math.round((i * 2600) / (32 * 32 - 1)));
  const stored = new Int16Array(hu.map((h) => h + 1024));
  return { file: dicomFile({ modality: "CT", rows: 32, columns: 32, stored, signed: true, slope: 1, intercept: -1024, ...(window ? { window } : {}), ...(extra ? { extra } : {}) }), hu };
}

/** Identifying attributes of the PS3.15 basic profile, each with a canary value. */
export const PHI_CANARIES: Record<string, string> = {
  PatientName: "Canaryname^Petronella",
  PatientID: "MRN99887766",
  PatientBirthDate: "19510203",
  PatientAddress: "12 Canary Lane Springfield",
  PatientTelephoneNumbers: "555-0199-321",
  OtherPatientIDs: "OPID5544332",
  OtherPatientNames: "Aliasname^Petra",
  PatientMotherBirthName: "Mothername",
  PatientBirthName: "Birthname",
  MedicalRecordLocator: "LOC7766554",
  EthnicGroup: "Canaryethnic",
  Occupation: "Canaryjob",
  AdditionalPatientHistory: "history of Canaryhistory",
  PatientComments: "Canarycomment",
  AccessionNumber: "ACC12345678",
  StudyID: "STUDY445566",
  StudyDate: "20240131",
  StudyTime: "101112",
  SeriesDate: "20240131",
  AcquisitionDate: "20240131",
  ContentDate: "20240131",
  InstitutionName: "Canary General Hospital",
  InstitutionAddress: "1 Hospital Road Canaryville",
  InstitutionalDepartmentName: "Canarydept",
  StationName: "CANARYSTATION",
  ReferringPhysicianName: "Referrer^Rowena",
  PerformingPhysicianName: "Performer^Percival",
  NameOfPhysiciansReadingStudy: "Reader^Reginald",
  OperatorsName: "Operator^Octavia",
  PhysiciansOfRecord: "Recorder^Rupert",
  RequestingPhysician: "Requester^Rhea",
  DeviceSerialNumber: "SN8877665544",
  ProtocolName: "Canaryprotocol",
  SeriesDescription: "Canaryseries for Petronella",
  StudyDescription: "CT chest for Petronella Canaryname MRN99887766",
  ImageComments: "Canaryimagecomment",
  DerivationDescription: "Canaryderivation",
  RequestAttributesSequence: undefined as never,
};
delete PHI_CANARIES.RequestAttributesSequence;
