import {
  capPixels,
  capTotal,
  type Dimensions,
  fourcc,
  invalid,
  need,
  type PixelLimits,
  u8,
  u16le,
  u24le,
  u32le,
} from './bytes.ts'

interface Chunk {
  id: string
  /** Offset of the chunk's payload. */
  at: number
  size: number
}

/** The chunks in `b[from, to)`, each padded to an even size; they must fill it exactly. */
function chunksOf(b: Uint8Array, from: number, to: number, where: string): Chunk[] {
  const out: Chunk[] = []
  let pos = from
  while (pos < to) {
    if (pos + 8 > to) invalid(`the file is truncated (it ends inside a chunk header ${where})`)
    const id = fourcc(b, pos)
    const size = u32le(b, pos + 4, 'chunk size')
    const at = pos + 8
    if (at + size > to) invalid(`the file is truncated (chunk "${id}" runs past the end ${where})`)
    out.push({ id, at, size })
    pos = at + size + (size & 1)
    if (pos > to) invalid(`the file is truncated (chunk "${id}" misses its padding byte)`)
  }
  return out
}

/** The frame size in a lossy (VP8) key frame header. */
function vp8Size(b: Uint8Array, c: Chunk): { width: number; height: number } {
  if (c.size < 10) invalid('the VP8 chunk is too short for a frame header')
  const tag = u24le(b, c.at, 'VP8 frame tag')
  if ((tag & 1) !== 0) invalid('the VP8 frame is not a key frame')
  if (((tag >> 1) & 7) > 3) invalid('the VP8 frame has an unknown version')
  if (((tag >> 4) & 1) === 0) invalid('the VP8 frame is not shown')
  if (tag >> 5 > c.size - 10) invalid('the VP8 first partition runs past the chunk')
  if (b[c.at + 3] !== 0x9d || b[c.at + 4] !== 0x01 || b[c.at + 5] !== 0x2a) {
    invalid('the VP8 start code is missing')
  }
  const width = u16le(b, c.at + 6, 'VP8 header') & 0x3fff
  const height = u16le(b, c.at + 8, 'VP8 header') & 0x3fff
  if (width === 0 || height === 0) invalid(`the VP8 frame size ${width}×${height} is not allowed`)
  return { width, height }
}

/** The image size in a lossless (VP8L) header. */
function vp8lSize(b: Uint8Array, c: Chunk): { width: number; height: number } {
  if (c.size < 5) invalid('the VP8L chunk is too short for a header')
  if (u8(b, c.at, 'VP8L header') !== 0x2f) invalid('the VP8L signature is missing')
  const bits = u32le(b, c.at + 1, 'VP8L header')
  if (bits >>> 29 !== 0) invalid('the VP8L version is not 0')
  return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
}

/** The bitstream of a still image or frame: an optional ALPH, then one VP8 or VP8L. */
function bitstreamSize(b: Uint8Array, chunks: Chunk[], where: string) {
  const frames = chunks.filter((c) => c.id === 'VP8 ' || c.id === 'VP8L')
  if (frames.length !== 1) invalid(`${where} holds ${frames.length} VP8/VP8L chunks instead of one`)
  const frame = frames[0] as Chunk
  return frame.id === 'VP8 ' ? vp8Size(b, frame) : vp8lSize(b, frame)
}

/**
 * A WebP: the RIFF size equals the file length exactly (no trailing data), the chunks fill
 * the file, and the first is VP8, VP8L or VP8X with dimensions that agree with the
 * bitstream; animations need ANIM and frames that lie inside the canvas.
 */
export function checkWebp(b: Uint8Array, limits: PixelLimits): Dimensions {
  const riffSize = u32le(b, 4, 'RIFF header')
  need(b, 8, 4, 'RIFF header')
  if (riffSize + 8 !== b.length) {
    invalid(
      riffSize + 8 > b.length
        ? `the file is truncated (RIFF declares ${riffSize + 8} bytes, the file has ${b.length})`
        : `${b.length - riffSize - 8} bytes of trailing data follow the RIFF container; WebP allows none`,
    )
  }
  const chunks = chunksOf(b, 12, b.length, 'of the file')
  const first = chunks[0]
  if (!first) invalid('the WebP holds no chunk')

  if (first.id === 'VP8 ' || first.id === 'VP8L') {
    if (chunks.length !== 1) invalid(`a simple WebP holds only its ${first.id.trim()} chunk`)
    const { width, height } = first.id === 'VP8 ' ? vp8Size(b, first) : vp8lSize(b, first)
    const totalPixels = capPixels(width, height, limits, 'the image')
    return { width, height, totalPixels }
  }
  if (first.id !== 'VP8X') invalid(`the first chunk is "${first.id}", not VP8, VP8L or VP8X`)
  if (first.size < 10) invalid('the VP8X chunk is too short')
  const flags = u8(b, first.at, 'VP8X')
  const width = u24le(b, first.at + 4, 'VP8X') + 1
  const height = u24le(b, first.at + 7, 'VP8X') + 1
  // The cap comes first: nothing below looks at pixel data of a bomb.
  const canvas = capPixels(width, height, limits, 'the canvas')
  const rest = chunks.slice(1)

  if ((flags & 0x02) === 0) {
    const size = bitstreamSize(b, rest, 'the image')
    if (size.width !== width || size.height !== height) {
      invalid(`the bitstream is ${size.width}×${size.height} but VP8X declares ${width}×${height}`)
    }
    return { width, height, totalPixels: canvas }
  }

  if (!rest.some((c) => c.id === 'ANIM' && c.size >= 6))
    invalid('an animated WebP has no ANIM chunk')
  const frames = rest.filter((c) => c.id === 'ANMF')
  if (frames.length === 0) invalid('an animated WebP has no frame')
  let totalPixels = 0
  for (const f of frames) {
    if (f.size < 16) invalid('an ANMF frame is too short')
    const x = u24le(b, f.at, 'ANMF') * 2
    const y = u24le(b, f.at + 3, 'ANMF') * 2
    const fw = u24le(b, f.at + 6, 'ANMF') + 1
    const fh = u24le(b, f.at + 9, 'ANMF') + 1
    if (x + fw > width || y + fh > height) invalid('an animation frame lies outside the canvas')
    totalPixels += capPixels(fw, fh, limits, 'an animation frame')
    capTotal(totalPixels, limits)
    const size = bitstreamSize(b, chunksOf(b, f.at + 16, f.at + f.size, 'of a frame'), 'a frame')
    if (size.width !== fw || size.height !== fh) {
      invalid(`a frame's bitstream is ${size.width}×${size.height} but ANMF declares ${fw}×${fh}`)
    }
  }
  return { width, height, totalPixels }
}
