import {
  capPixels,
  capTotal,
  type Dimensions,
  fourcc,
  invalid,
  need,
  type PixelLimits,
  u8,
  u32be,
} from './bytes.ts'
import { crc32 } from './crc32.ts'

export const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const

/** Bit depths each colour type allows (PNG specification, table 11.1). */
const DEPTHS: Record<number, readonly number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
}

const MAX_U31 = 0x7fffffff

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
}

/**
 * A PNG, checked chunk by chunk: the signature, IHDR first with sane values, every chunk's
 * length and CRC up to IEND, PLTE and IDAT in their places, no unknown critical chunk, a
 * zlib header on the image data, and not one byte after IEND. Nothing is decompressed.
 */
export function checkPng(b: Uint8Array, limits: PixelLimits): Dimensions {
  let pos = PNG_SIGNATURE.length
  let width = 0
  let height = 0
  let colorType = -1
  let bitDepth = 0
  let sawPalette = false
  let idatState: 'before' | 'in' | 'after' = 'before'
  let idatBytes = 0
  const zlibHead: number[] = []
  let chunkIndex = 0
  let totalPixels = 0
  let framePixels = 0

  for (;;) {
    if (pos >= b.length) invalid('the file is truncated (it ends before the IEND chunk)')
    need(b, pos, 8, 'chunk header')
    const length = u32be(b, pos, 'chunk length')
    if (length > MAX_U31) invalid(`chunk ${chunkIndex} declares an impossible length ${length}`)
    const typeAt = pos + 4
    for (let i = 0; i < 4; i++) {
      if (!isLetter(b[typeAt + i] as number)) {
        invalid(`chunk ${chunkIndex} has an invalid type "${fourcc(b, typeAt)}"`)
      }
    }
    const type = fourcc(b, typeAt)
    if (((b[typeAt + 2] as number) & 0x20) !== 0) {
      invalid(`chunk ${type} has the reserved bit set`)
    }
    const dataAt = pos + 8
    need(b, dataAt, length + 4, `${type} chunk`)
    const stored = u32be(b, dataAt + length, `${type} CRC`)
    if (crc32(b, typeAt, dataAt + length) !== stored) {
      invalid(`the CRC of chunk ${type} does not match its contents (the file is corrupt)`)
    }

    if (chunkIndex === 0 && type !== 'IHDR') invalid('the first chunk is not IHDR')
    const critical = ((b[typeAt] as number) & 0x20) === 0
    if (idatState === 'in' && type !== 'IDAT') idatState = 'after'

    switch (type) {
      case 'IHDR': {
        if (chunkIndex !== 0) invalid('IHDR appears more than once')
        if (length !== 13) invalid(`IHDR is ${length} bytes long instead of 13`)
        width = u32be(b, dataAt, 'IHDR')
        height = u32be(b, dataAt + 4, 'IHDR')
        if (width === 0 || height === 0 || width > MAX_U31 || height > MAX_U31) {
          invalid(`the image size ${width}×${height} is not allowed`)
        }
        bitDepth = u8(b, dataAt + 8, 'IHDR')
        colorType = u8(b, dataAt + 9, 'IHDR')
        const allowed = DEPTHS[colorType]
        if (!allowed) invalid(`colour type ${colorType} does not exist`)
        if (!allowed.includes(bitDepth)) {
          invalid(`bit depth ${bitDepth} is not allowed with colour type ${colorType}`)
        }
        if (b[dataAt + 10] !== 0) invalid('the compression method is not 0')
        if (b[dataAt + 11] !== 0) invalid('the filter method is not 0')
        if (b[dataAt + 12] !== 0 && b[dataAt + 12] !== 1)
          invalid('the interlace method is not 0 or 1')
        // The cap comes first: nothing below looks at pixel data of a bomb.
        framePixels = capPixels(width, height, limits, 'the image')
        totalPixels = framePixels
        break
      }
      case 'PLTE': {
        if (sawPalette) invalid('PLTE appears more than once')
        if (idatState !== 'before') invalid('PLTE comes after the image data')
        if (colorType === 0 || colorType === 4) {
          invalid(`a greyscale image (colour type ${colorType}) cannot have a PLTE chunk`)
        }
        if (length === 0 || length % 3 !== 0 || length > 768) {
          invalid(`PLTE is ${length} bytes long; it must hold 1–256 RGB entries`)
        }
        if (colorType === 3 && length / 3 > 2 ** bitDepth) {
          invalid(`PLTE has ${length / 3} entries, more than bit depth ${bitDepth} allows`)
        }
        sawPalette = true
        break
      }
      case 'IDAT': {
        if (idatState === 'after') invalid('IDAT chunks are not consecutive')
        if (colorType === 3 && !sawPalette)
          invalid('an indexed-colour image has no PLTE before IDAT')
        idatState = 'in'
        idatBytes += length
        for (let i = 0; i < length && zlibHead.length < 2; i++) {
          zlibHead.push(b[dataAt + i] as number)
        }
        break
      }
      case 'IEND': {
        if (length !== 0) invalid('IEND is not empty')
        if (idatState === 'before') invalid('the image has no IDAT chunk')
        checkZlibHeader(zlibHead, idatBytes)
        const end = dataAt + 4
        if (end !== b.length) {
          invalid(`${b.length - end} bytes of trailing data follow IEND; PNG allows none`)
        }
        capTotal(totalPixels, limits)
        return { width, height, totalPixels }
      }
      case 'fcTL': {
        // APNG frames: each is capped like the image, and all of them together.
        if (length !== 26) invalid(`fcTL is ${length} bytes long instead of 26`)
        const fw = u32be(b, dataAt + 4, 'fcTL')
        const fh = u32be(b, dataAt + 8, 'fcTL')
        const fx = u32be(b, dataAt + 12, 'fcTL')
        const fy = u32be(b, dataAt + 16, 'fcTL')
        if (fw === 0 || fh === 0 || fx + fw > width || fy + fh > height) {
          invalid('an animation frame (fcTL) lies outside the image')
        }
        totalPixels += capPixels(fw, fh, limits, 'an animation frame')
        capTotal(totalPixels, limits)
        break
      }
      default:
        if (critical) invalid(`unknown critical chunk ${type}`)
    }
    pos = dataAt + length + 4
    chunkIndex++
  }
}

/** The two bytes every zlib stream starts with (RFC 1950): deflate, a valid window, a good check. */
function checkZlibHeader(head: number[], idatBytes: number): void {
  const [cmf, flg] = head
  if (cmf === undefined || flg === undefined || idatBytes < 8) {
    invalid('the image data is too short to be a zlib stream')
  }
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7 || ((cmf << 8) | flg) % 31 !== 0 || (flg & 0x20) !== 0) {
    invalid('the image data does not start with a valid zlib header')
  }
}
