import {
  capPixels,
  capTotal,
  type Dimensions,
  invalid,
  need,
  type PixelLimits,
  u8,
  u16le,
} from './bytes.ts'
import { STRAY_BYTES } from './jpeg.ts'

const IMAGE = 0x2c
const EXTENSION = 0x21
const TRAILER = 0x3b

/** Skips a run of data sub-blocks up to its zero-length terminator. */
function skipSubBlocks(b: Uint8Array, from: number, what: string): number {
  let pos = from
  for (;;) {
    const size = u8(b, pos, what)
    pos += 1
    if (size === 0) return pos
    need(b, pos, size, what)
    pos += size
  }
}

/**
 * A GIF: the header, the logical screen and its colour table, then every block (image
 * descriptors with their colour tables and LZW data, extensions) through to the trailer,
 * with at most a few stray bytes after it. The LZW data is not decoded.
 */
export function checkGif(b: Uint8Array, limits: PixelLimits): Dimensions {
  const width = u16le(b, 6, 'logical screen')
  const height = u16le(b, 8, 'logical screen')
  const packed = u8(b, 10, 'logical screen')
  need(b, 11, 2, 'logical screen')
  if (width === 0 || height === 0) invalid(`the screen size ${width}×${height} is not allowed`)
  // The cap comes first: nothing below looks at pixel data of a bomb.
  capPixels(width, height, limits, 'the image')
  let pos = 13
  if (packed & 0x80) {
    const size = 3 * (2 << (packed & 7))
    need(b, pos, size, 'global colour table')
    pos += size
  }

  let frames = 0
  let totalPixels = 0
  for (;;) {
    if (pos >= b.length) invalid('the file is truncated (it ends before the trailer)')
    const block = b[pos] as number
    pos += 1
    if (block === TRAILER) {
      if (frames === 0) invalid('the GIF holds no image')
      const trailing = b.length - pos
      if (trailing > STRAY_BYTES) {
        invalid(
          `${trailing} bytes of trailing data follow the trailer; at most ${STRAY_BYTES} stray bytes are tolerated`,
        )
      }
      return { width, height, totalPixels }
    }
    if (block === EXTENSION) {
      u8(b, pos, 'extension')
      pos = skipSubBlocks(b, pos + 1, 'extension')
      continue
    }
    if (block !== IMAGE) invalid(`unknown block 0x${block.toString(16)} at byte ${pos - 1}`)
    need(b, pos, 9, 'image descriptor')
    const fw = u16le(b, pos + 4, 'image descriptor')
    const fh = u16le(b, pos + 6, 'image descriptor')
    const flags = b[pos + 8] as number
    if (fw === 0 || fh === 0) invalid(`an image of size ${fw}×${fh} is not allowed`)
    totalPixels += capPixels(fw, fh, limits, 'a frame')
    capTotal(totalPixels, limits)
    pos += 9
    if (flags & 0x80) {
      const size = 3 * (2 << (flags & 7))
      need(b, pos, size, 'local colour table')
      pos += size
    }
    const codeSize = u8(b, pos, 'image data')
    if (codeSize < 1 || codeSize > 11) invalid(`the LZW minimum code size ${codeSize} is invalid`)
    pos = skipSubBlocks(b, pos + 1, 'image data')
    frames++
  }
}
