// A small tar reader/writer (ustar + PAX long names), enough for backup archives and the
// Engine API's archive endpoint. TarParser reads an archive as it streams in (volume contents
// never have to fit in memory); readTar/writeTar are the in-memory forms for small archives.
// Reading is defensive (see checkMember in archive-safety.ts).

export type TarEntryType = "file" | "dir" | "symlink" | "hardlink" | "char" | "block" | "fifo" | "other";

export interface TarEntry {
  name: string;
  type: TarEntryType;
  /** File contents; empty for anything but files. */
  data: Uint8Array;
  mode: number;
  uid: number;
  gid: number;
  /** Modification time in seconds. */
  mtime: number;
  /** Target of a symlink or hardlink. */
  linkname: string;
  uname?: string;
  gname?: string;
}

const BLOCK = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const TYPE_FLAGS: Record<string, TarEntryType> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "1": "hardlink",
  "2": "symlink",
  "3": "char",
  "4": "block",
  "5": "dir",
  "6": "fifo",
};

/** Member types that have no contents of their own. */
const HEADER_ONLY = new Set<TarEntryType>(["hardlink", "symlink", "char", "block", "dir", "fifo"]);

function readString(buf: Uint8Array, offset: number, length: number): string {
  let end = offset;
  while (end < offset + length && buf[end] !== 0) end++;
  return decoder.decode(buf.subarray(offset, end));
}

function readOctal(buf: Uint8Array, offset: number, length: number): number {
  // GNU base-256 encoding for big numbers: high bit of the first byte set.
  if (buf[offset] & 0x80) {
    let value = buf[offset] & 0x7f;
    for (let i = 1; i < length; i++) value = value * 256 + buf[offset + i];
    return value;
  }
  const text = readString(buf, offset, length).trim();
  if (text === "") return 0;
  const value = parseInt(text, 8);
  if (!Number.isFinite(value)) throw new Error(`Malformed tar header field "${text}"`);
  return value;
}

function checksumOf(header: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
  return sum;
}

/** PAX records: "<len> <key>=<value>\n" repeated. */
function parsePax(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  let pos = 0;
  while (pos < data.length) {
    let space = pos;
    while (space < data.length && data[space] !== 0x20) space++;
    const length = parseInt(decoder.decode(data.subarray(pos, space)), 10);
    if (!Number.isFinite(length) || length <= 0 || pos + length > data.length) throw new Error("Malformed PAX header");
    const record = decoder.decode(data.subarray(space + 1, pos + length - 1));
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    pos += length;
  }
  return out;
}

/** A member's header: everything but its contents, plus their size. */
export type TarHeader = Omit<TarEntry, "data"> & { size: number };

/** Where a member's contents go while they stream past. */
export interface TarSink {
  write(chunk: Uint8Array): void;
  end(): void;
}

/** PAX, GNU long-name and long-link members carry metadata, kept in memory up to this size. */
const MAX_META_BYTES = 1024 * 1024;

/**
 * Reads a tar archive as it arrives, in chunks of any size. `onEntry` sees each member's header
 * and may return a sink for a file's contents. Only one header block (and the metadata members
 * before a header) is held at a time. Throws on a malformed archive.
 */
export class TarParser {
  private readonly block = new Uint8Array(BLOCK);
  private filled = 0;
  /** Contents bytes left of the current member, and the padding after them. */
  private remaining = 0;
  private padding = 0;
  private sink: TarSink | undefined;
  private meta: { flag: string; parts: Uint8Array[] } | undefined;
  private pax: Record<string, string> = {};
  private longName: string | undefined;
  private longLink: string | undefined;
  private offset = 0;
  private done = false;

  constructor(private readonly onEntry: (header: TarHeader) => TarSink | undefined) {}

  push(chunk: Uint8Array): void {
    let pos = 0;
    while (pos < chunk.length && !this.done) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, chunk.length - pos);
        const part = chunk.subarray(pos, pos + n);
        if (this.meta) this.meta.parts.push(part.slice());
        else this.sink?.write(part);
        this.remaining -= n;
        pos += n;
        this.offset += n;
        if (this.remaining === 0) this.finishMember();
      } else if (this.padding > 0) {
        const n = Math.min(this.padding, chunk.length - pos);
        this.padding -= n;
        pos += n;
        this.offset += n;
      } else {
        const n = Math.min(BLOCK - this.filled, chunk.length - pos);
        this.block.set(chunk.subarray(pos, pos + n), this.filled);
        this.filled += n;
        pos += n;
        if (this.filled === BLOCK) {
          this.filled = 0;
          this.header();
          this.offset += BLOCK;
        }
      }
    }
  }

  /** Whether the end-of-archive marker was read: a writer that failed midway never writes it. */
  get complete(): boolean {
    return this.done;
  }

  /** The input has ended: throws when a member was cut short. */
  end(): void {
    if (!this.done && (this.remaining > 0 || this.meta)) throw new Error("Truncated tar archive");
  }

  private header(): void {
    const header = this.block;
    if (header.every((b) => b === 0)) {
      this.done = true; // end-of-archive marker
      return;
    }
    const stored = readOctal(header, 148, 8);
    if (stored !== checksumOf(header)) throw new Error(`Bad tar header checksum at offset ${this.offset}`);
    const flag = String.fromCharCode(header[156]);
    const size = this.pax.size !== undefined ? Number(this.pax.size) : readOctal(header, 124, 12);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error("Bad tar member size");
    this.padding = size % BLOCK === 0 ? 0 : BLOCK - (size % BLOCK);
    this.remaining = size;
    if (flag === "x" || flag === "L" || flag === "K") {
      if (size > MAX_META_BYTES) throw new Error("Tar metadata member too large");
      this.meta = { flag, parts: [] };
    } else if (flag === "g") {
      this.sink = undefined; // global PAX header: nothing we need
    } else {
      const isUstar = readString(header, 257, 6).startsWith("ustar");
      // Read as Docker's extractor (Go's archive/tar) reads it, or a member checked here could
      // land elsewhere there: the name prefix counts whenever the magic is POSIX's "ustar\0"
      // (whatever the version; 131 bytes in star's variant, marked "tar\0" at 508), never in GNU
      // headers ("ustar  "), which keep other fields in those bytes.
      const posix = isUstar && header[262] === 0;
      const star = posix && header[508] === 0x74 && header[509] === 0x61 && header[510] === 0x72 && header[511] === 0;
      const prefix = posix ? readString(header, 345, star ? 131 : 155) : "";
      const baseName = readString(header, 0, 100);
      const pax = this.pax;
      const type = TYPE_FLAGS[flag] ?? "other";
      const shownName = pax.path ?? this.longName ?? baseName;
      // Where readers disagree on a member's name, a name checked here may not be the one
      // Docker's extractor writes: Go takes a GNU long name over a PAX path, and a sparse file's
      // GNU.sparse.name over both. Backups never hold either; such a member is refused.
      if (flag === "S" || Object.keys(pax).some((k) => k.startsWith("GNU.sparse."))) throw new Error(`Tar member "${shownName}" is a GNU sparse file, which is not taken`);
      if (pax.path !== undefined && this.longName !== undefined && pax.path !== this.longName) throw new Error(`Tar member "${shownName}" has two different names (a PAX path and a GNU long name)`);
      if (pax.linkpath !== undefined && this.longLink !== undefined && pax.linkpath !== this.longLink) throw new Error(`Tar member "${shownName}" has two different link targets (PAX and GNU)`);
      // Go reads no data after a directory, link, device or fifo header whatever size it declares,
      // and takes those bytes for the next headers: members hidden from a reader that skips them.
      if (HEADER_ONLY.has(type) && size > 0) throw new Error(`Tar member "${shownName}" (${type}) declares ${size} bytes of data`);
      const entry: TarHeader = {
        name: pax.path ?? this.longName ?? (prefix ? `${prefix}/${baseName}` : baseName),
        type,
        size: type === "file" ? size : 0,
        mode: readOctal(header, 100, 8),
        uid: pax.uid !== undefined ? Number(pax.uid) : readOctal(header, 108, 8),
        gid: pax.gid !== undefined ? Number(pax.gid) : readOctal(header, 116, 8),
        mtime: pax.mtime !== undefined ? Math.floor(Number(pax.mtime)) : readOctal(header, 136, 12),
        linkname: pax.linkpath ?? this.longLink ?? readString(header, 157, 100),
        uname: pax.uname ?? (isUstar ? readString(header, 265, 32) : undefined),
        gname: pax.gname ?? (isUstar ? readString(header, 297, 32) : undefined),
      };
      this.pax = {};
      this.longName = undefined;
      this.longLink = undefined;
      // Only files have contents; anything else's data blocks are skipped.
      this.sink = type === "file" ? this.onEntry(entry) : (this.onEntry(entry), undefined);
    }
    if (size === 0) this.finishMember();
  }

  private finishMember(): void {
    const meta = this.meta;
    if (meta) {
      this.meta = undefined;
      const data = concat(meta.parts);
      if (meta.flag === "x") this.pax = { ...this.pax, ...parsePax(data) };
      else if (meta.flag === "L") this.longName = readString(data, 0, data.length);
      else this.longLink = readString(data, 0, data.length);
      return;
    }
    this.sink?.end();
    this.sink = undefined;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Parse a whole (uncompressed) tar archive in memory. Throws on a malformed archive. */
export function readTar(buf: Uint8Array): TarEntry[] {
  const entries: TarEntry[] = [];
  const parser = new TarParser(({ size: _size, ...header }) => {
    const entry: TarEntry = { ...header, data: new Uint8Array(0) };
    entries.push(entry);
    const parts: Uint8Array[] = [];
    return { write: (chunk) => parts.push(chunk), end: () => (entry.data = concat(parts)) };
  });
  parser.push(buf);
  parser.end();
  return entries;
}

const FLAG_OF: Record<TarEntryType, string> = {
  file: "0",
  hardlink: "1",
  symlink: "2",
  char: "3",
  block: "4",
  dir: "5",
  fifo: "6",
  other: "0",
};

function writeString(header: Uint8Array, offset: number, length: number, value: string): void {
  header.set(encoder.encode(value).subarray(0, length), offset);
}

function writeOctal(header: Uint8Array, offset: number, length: number, value: number): void {
  writeString(header, offset, length - 1, Math.max(0, Math.floor(value)).toString(8).padStart(length - 1, "0"));
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  // The length prefix counts itself, so grow it until it is stable.
  let length = body.length + 1;
  while (String(length).length + encoder.encode(body).length !== length) length = String(length).length + encoder.encode(body).length;
  return `${length}${body}`;
}

function header(entry: Omit<TarEntry, "data">, size: number, flag: string): Uint8Array {
  const h = new Uint8Array(BLOCK);
  writeString(h, 0, 100, entry.name);
  writeOctal(h, 100, 8, entry.mode);
  writeOctal(h, 108, 8, entry.uid);
  writeOctal(h, 116, 8, entry.gid);
  writeOctal(h, 124, 12, size);
  writeOctal(h, 136, 12, entry.mtime);
  h.fill(32, 148, 156);
  writeString(h, 156, 1, flag);
  writeString(h, 157, 100, entry.linkname);
  writeString(h, 257, 6, "ustar");
  writeString(h, 263, 2, "00");
  writeString(h, 265, 32, entry.uname ?? "");
  writeString(h, 297, 32, entry.gname ?? "");
  writeOctal(h, 148, 7, checksumOf(h));
  return h;
}

/** The blocks before a member's contents: a PAX header when the name, link or size needs one, then its header. */
export function headerBlocks(entry: Omit<TarEntry, "data">, size: number): Uint8Array[] {
  const parts: Uint8Array[] = [];
  const needsPax = encoder.encode(entry.name).length > 100 || encoder.encode(entry.linkname).length > 100 || size > 0o77777777777;
  if (needsPax) {
    let records = paxRecord("path", entry.name);
    if (entry.linkname) records += paxRecord("linkpath", entry.linkname);
    if (size > 0o77777777777) records += paxRecord("size", String(size));
    const body = encoder.encode(records);
    const paxName = `PaxHeaders/${entry.name.split("/").pop()!.slice(0, 80)}`;
    parts.push(header({ ...entry, name: paxName, linkname: "" }, body.length, "x"), body, paddingFor(body.length));
  }
  parts.push(header(entry, size, FLAG_OF[entry.type]));
  return parts;
}

/** Zeros that fill a member's contents of `size` bytes up to a whole block. */
export const paddingFor = (size: number) => new Uint8Array(size % BLOCK === 0 ? 0 : BLOCK - (size % BLOCK));

/** The end-of-archive marker. */
export const endOfArchive = () => new Uint8Array(BLOCK * 2);

/** Serialise entries to an uncompressed tar archive (PAX headers for long names). */
export function writeTar(entries: TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    const size = entry.type === "file" ? entry.data.length : 0;
    parts.push(...headerBlocks(entry, size));
    if (size > 0) parts.push(entry.data, paddingFor(size));
  }
  parts.push(endOfArchive());
  return concat(parts);
}

/** A regular file entry with sensible defaults. */
export function fileEntry(name: string, data: Uint8Array | string, mode = 0o644, mtime = Math.floor(Date.now() / 1000)): TarEntry {
  return {
    name,
    type: "file",
    data: typeof data === "string" ? encoder.encode(data) : data,
    mode,
    uid: 0,
    gid: 0,
    mtime,
    linkname: "",
  };
}
