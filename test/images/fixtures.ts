import { crc32, deflateSync, inflateSync } from 'node:zlib'

/**
 * Image fixtures built byte by byte in the tests (nothing checked in): valid files of each
 * format and the broken variants the validator must refuse. PNGs are compressed with zlib
 * and framed with zlib's own CRC, independently of the validator's code.
 */

const be32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
const le16 = (n: number) => [n & 255, (n >>> 8) & 255]
const le24 = (n: number) => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255]
const le32 = (n: number) => [...le24(n), (n >>> 24) & 255]
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0))
const bytes = (...parts: (number[] | Uint8Array)[]) => Uint8Array.from(parts.flatMap((p) => [...p]))

export const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

export function pngChunk(type: string, data: number[] | Uint8Array = []): Uint8Array {
  const body = bytes(ascii(type), data)
  return bytes(be32(data.length), body, be32(crc32(body)))
}

/** Channels per pixel of each PNG colour type. */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }

export interface PngOptions {
  width?: number
  height?: number
  colorType?: 0 | 2 | 3 | 4 | 6
  bitDepth?: number
  /** Pixel bytes come from this seed (deterministic). */
  seed?: number
  /** Extra ancillary chunks placed before the image data. */
  extra?: [string, number[]][]
  /** Splits the compressed data over this many IDAT chunks. */
  idatChunks?: number
}

/** Raw scanlines: a filter byte (0–4, all valid) then the row's bytes. */
function scanlines(width: number, height: number, bitsPerPixel: number, seed: number) {
  const rowBytes = Math.ceil((width * bitsPerPixel) / 8)
  const out = new Uint8Array(height * (rowBytes + 1))
  let s = seed >>> 0 || 1
  for (let i = 0; i < out.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0
    out[i] = i % (rowBytes + 1) === 0 ? (s >>> 16) % 5 : (s >>> 16) & 255
  }
  return out
}

export function png(o: PngOptions = {}): Uint8Array {
  const width = o.width ?? 4
  const height = o.height ?? 3
  const colorType = o.colorType ?? 6
  const bitDepth = o.bitDepth ?? 8
  const ihdr = [...be32(width), ...be32(height), bitDepth, colorType, 0, 0, 0]
  const chunks = [pngChunk('IHDR', ihdr)]
  for (const [type, data] of o.extra ?? []) chunks.push(pngChunk(type, data))
  if (colorType === 3) {
    const entries = 2 ** Math.min(bitDepth, 4)
    chunks.push(
      pngChunk(
        'PLTE',
        Array.from({ length: entries * 3 }, (_, i) => (i * 37) & 255),
      ),
    )
  }
  const raw = scanlines(width, height, (CHANNELS[colorType] as number) * bitDepth, o.seed ?? 7)
  if (colorType === 3) {
    // Indices must stay inside the palette (the validator does not decode, but the file is real).
    const rowBytes = Math.ceil((width * bitDepth) / 8)
    for (let i = 0; i < raw.length; i++) if (i % (rowBytes + 1) !== 0) raw[i] = 0
  }
  const z = deflateSync(raw)
  const parts = Math.max(1, Math.min(o.idatChunks ?? 1, z.length))
  const step = Math.ceil(z.length / parts)
  for (let i = 0; i < z.length; i += step) chunks.push(pngChunk('IDAT', z.subarray(i, i + step)))
  chunks.push(pngChunk('IEND'))
  return bytes(PNG_SIGNATURE, ...chunks)
}

/** A PNG whose IHDR claims `width`×`height` over a tiny, valid zlib stream (a bomb's header). */
export function pngBomb(width = 100_000, height = 100_000): Uint8Array {
  return bytes(
    PNG_SIGNATURE,
    pngChunk('IHDR', [...be32(width), ...be32(height), 8, 0, 0, 0, 0]),
    pngChunk('IDAT', deflateSync(new Uint8Array(1000))),
    pngChunk('IEND'),
  )
}

/**
 * An independent check that bytes are a decodable, non-interlaced PNG: every chunk framed
 * and CRC-checked with zlib's CRC, IHDR first, IEND last and final, and the IDAT stream
 * inflating to exactly the scanlines the header promises, each with a valid filter byte.
 */
export function decodesAsPng(b: Uint8Array): boolean {
  if (b.length < 8 || PNG_SIGNATURE.some((v, i) => b[i] !== v)) return false
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  let pos = 8
  let header: { width: number; height: number; depth: number; type: number } | undefined
  const idat: Uint8Array[] = []
  let first = true
  while (pos + 12 <= b.length) {
    const length = view.getUint32(pos)
    const type = String.fromCharCode(...b.subarray(pos + 4, pos + 8))
    if (pos + 12 + length > b.length) return false
    if (crc32(b.subarray(pos + 4, pos + 8 + length)) !== view.getUint32(pos + 8 + length)) {
      return false
    }
    const data = b.subarray(pos + 8, pos + 8 + length)
    if (first !== (type === 'IHDR')) return false
    first = false
    if (type === 'IHDR') {
      if (length !== 13 || data[12] !== 0) return false
      header = {
        width: view.getUint32(pos + 8),
        height: view.getUint32(pos + 12),
        depth: data[8] as number,
        type: data[9] as number,
      }
    } else if (type === 'IDAT') idat.push(data)
    pos += 12 + length
    if (type === 'IEND') {
      if (pos !== b.length || !header) return false
      const channels = CHANNELS[header.type]
      if (!channels) return false
      const rowBytes = Math.ceil((header.width * channels * header.depth) / 8)
      let raw: Uint8Array
      try {
        raw = inflateSync(bytes(...idat))
      } catch {
        return false
      }
      if (raw.length !== header.height * (rowBytes + 1)) return false
      for (let r = 0; r < header.height; r++)
        if ((raw[r * (rowBytes + 1)] as number) > 4) return false
      return true
    }
  }
  return false
}

/**
 * A baseline greyscale JPEG, `width`×`height`, every 8×8 block flat grey: one Huffman
 * table with the single DC category 0 and one with only end-of-block, so each block is
 * the two bits `00`, padded with ones at the end of the scan.
 */
export function jpeg(o: { width?: number; height?: number; comment?: string } = {}): Uint8Array {
  const width = o.width ?? 16
  const height = o.height ?? 8
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8)
  const bits = '00'.repeat(blocks)
  const padded = bits.padEnd(Math.ceil(bits.length / 8) * 8, '1')
  const scan: number[] = []
  for (let i = 0; i < padded.length; i += 8) {
    const byte = Number.parseInt(padded.slice(i, i + 8), 2)
    scan.push(byte)
    if (byte === 0xff) scan.push(0x00)
  }
  const segment = (marker: number, data: number[]) => [
    0xff,
    marker,
    ...[(data.length + 2) >> 8, (data.length + 2) & 255],
    ...data,
  ]
  const huffman = (tableClass: number) => [
    (tableClass << 4) | 0,
    1,
    ...new Array<number>(15).fill(0),
    0x00,
  ]
  return bytes(
    [0xff, 0xd8],
    segment(0xe0, [...ascii('JFIF'), 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    o.comment ? segment(0xfe, ascii(o.comment)) : [],
    segment(0xdb, [0x00, ...new Array<number>(64).fill(1)]),
    segment(0xc0, [8, height >> 8, height & 255, width >> 8, width & 255, 1, 1, 0x11, 0]),
    segment(0xc4, huffman(0)),
    segment(0xc4, huffman(1)),
    segment(0xda, [1, 1, 0x00, 0, 63, 0]),
    scan,
    [0xff, 0xd9],
  )
}

/** The SOF0 of a JPEG with these dimensions (for the bomb header). */
export function jpegWithSize(width: number, height: number): Uint8Array {
  const b = jpeg({ width: 8, height: 8 })
  const sof = b.findIndex((v, i) => v === 0xff && b[i + 1] === 0xc0)
  b.set([height >> 8, height & 255, width >> 8, width & 255], sof + 5)
  return b
}

/** VP8L bitstream of a 1×1 image (lossless), as libwebp writes it. */
const VP8L_1X1 = [0x2f, 0x00, 0x00, 0x00, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07]
/** VP8 key frame of a 1×1 image (lossy), as libwebp writes it. */
const VP8_1X1 = [
  0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0x01, 0x00, 0x01, 0x00, 0x0e, 0xc0, 0xfe, 0x25, 0xa4, 0x00,
  0x03, 0x70, 0x00, 0x00, 0x00, 0x00,
]
/** ALPH chunk and its VP8 key frame of a 1×1 lossy image with alpha. */
const ALPH_1X1 = [0x11, 0x07, 0x10, 0x11, 0xfd, 0x0f, 0x44, 0x44, 0xff, 0x03, 0x00, 0x00]
const VP8_ALPHA_1X1 = [
  0x14, 0x01, 0x00, 0x9d, 0x01, 0x2a, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0xfe, 0x00, 0x00, 0x0d,
  0xc0, 0x00, 0xfe, 0xe6, 0xb5, 0x00, 0x00, 0x00,
]

export function riffChunk(id: string, data: number[] | Uint8Array): number[] {
  const pad = data.length & 1 ? [0] : []
  return [...ascii(id), ...le32(data.length), ...data, ...pad]
}

export function riff(chunks: number[][]): Uint8Array {
  const body = [...ascii('WEBP'), ...chunks.flat()]
  return bytes(ascii('RIFF'), le32(body.length), body)
}

/** VP8X payload: flags, three reserved bytes, canvas width−1 and height−1 (24 bits each). */
export function vp8x(flags: number, width: number, height: number): number[] {
  return [flags, 0, 0, 0, ...le24(width - 1), ...le24(height - 1)]
}

export const webp = {
  lossless: () => riff([riffChunk('VP8L', VP8L_1X1)]),
  lossy: () => riff([riffChunk('VP8 ', VP8_1X1)]),
  alpha: () =>
    riff([
      riffChunk('VP8X', vp8x(0x10, 1, 1)),
      riffChunk('ALPH', ALPH_1X1),
      riffChunk('VP8 ', VP8_ALPHA_1X1),
    ]),
  animated: () =>
    riff([
      riffChunk('VP8X', vp8x(0x12, 1, 1)),
      riffChunk('ANIM', [255, 255, 255, 255, 0, 0]),
      riffChunk('ANMF', [
        ...le24(0),
        ...le24(0),
        ...le24(0),
        ...le24(0),
        ...le24(100),
        0,
        ...riffChunk('VP8L', VP8L_1X1),
      ]),
    ]),
  /** An extended WebP whose canvas claims `width`×`height` (a bomb's header). */
  canvas: (width: number, height: number) =>
    riff([riffChunk('VP8X', vp8x(0, width, height)), riffChunk('VP8L', VP8L_1X1)]),
}

/** GIF LZW (variable-width codes, clear at a full table), as every encoder writes it. */
function lzw(indices: number[], minCodeSize: number): number[] {
  const clear = 1 << minCodeSize
  const end = clear + 1
  const out: number[] = []
  let acc = 0
  let nbits = 0
  let size = minCodeSize + 1
  const emit = (code: number) => {
    acc |= code << nbits
    nbits += size
    while (nbits >= 8) {
      out.push(acc & 255)
      acc >>>= 8
      nbits -= 8
    }
  }
  let table = new Map<string, number>()
  let next = end + 1
  emit(clear)
  let prefix = String(indices[0])
  const codeOf = (key: string) => table.get(key) ?? Number(key)
  for (const k of indices.slice(1)) {
    const key = `${prefix},${k}`
    if (table.has(key)) {
      prefix = key
      continue
    }
    emit(codeOf(prefix))
    if (next === 4096) {
      emit(clear)
      table = new Map()
      next = end + 1
      size = minCodeSize + 1
    } else {
      if (next === 1 << size) size++
      table.set(key, next++)
    }
    prefix = String(k)
  }
  emit(codeOf(prefix))
  emit(end)
  if (nbits > 0) out.push(acc & 255)
  return out
}

function subBlocks(data: number[]): number[] {
  const out: number[] = []
  for (let i = 0; i < data.length; i += 255) {
    const part = data.slice(i, i + 255)
    out.push(part.length, ...part)
  }
  out.push(0)
  return out
}

/** A GIF89a with a 4-colour global table and `frames` frames of patterned pixels. */
export function gif(o: { width?: number; height?: number; frames?: number } = {}): Uint8Array {
  const width = o.width ?? 5
  const height = o.height ?? 4
  const palette = [0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255]
  const frames: number[] = []
  for (let f = 0; f < (o.frames ?? 1); f++) {
    const pixels = Array.from({ length: width * height }, (_, i) => (i + f + (i >> 3)) % 4)
    frames.push(
      ...[0x21, 0xf9, 4, 0, ...le16(10), 0, 0],
      0x2c,
      ...le16(0),
      ...le16(0),
      ...le16(width),
      ...le16(height),
      0,
      2,
      ...subBlocks(lzw(pixels, 2)),
    )
  }
  return bytes(ascii('GIF89a'), le16(width), le16(height), [0x81, 0, 0], palette, frames, [0x3b])
}

/** A GIF whose logical screen claims `width`×`height` (a bomb's header). */
export function gifWithScreen(width: number, height: number): Uint8Array {
  const b = gif()
  b.set([...le16(width), ...le16(height)], 6)
  return b
}

// Broken variants ---------------------------------------------------------------------

export const truncate = (b: Uint8Array, keep: number) => b.slice(0, keep)
export const append = (b: Uint8Array, extra: number[]) => bytes(b, extra)

/** Flips one byte inside the first IDAT's data, leaving its CRC stale. */
export function pngWithBadCrc(b = png()): Uint8Array {
  const out = b.slice()
  const idat = findChunk(out, 'IDAT')
  out[idat + 8] = (out[idat + 8] as number) ^ 0x01
  return out
}

export function pngWithoutIend(b = png()): Uint8Array {
  return b.slice(0, findChunk(b, 'IEND'))
}

export function findChunk(b: Uint8Array, type: string): number {
  const t = ascii(type)
  for (let i = 8; i + 8 <= b.length; i++) if (t.every((v, j) => b[i + 4 + j] === v)) return i
  throw new Error(`no ${type} chunk`)
}

/** A WebP whose RIFF size field is off by `delta`. */
export function webpWithRiffSize(b: Uint8Array, delta: number): Uint8Array {
  const out = b.slice()
  new DataView(out.buffer).setUint32(4, out.length - 8 + delta, true)
  return out
}

export const toBase64 = (b: Uint8Array) => Buffer.from(b).toString('base64')
