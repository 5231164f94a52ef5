import { LIMITS } from '../../shared/constants.ts'
import { ascii, type Dimensions, InvalidImage, type PixelLimits, startsWith } from './bytes.ts'
import { checkGif } from './gif.ts'
import { checkJpeg } from './jpeg.ts'
import { checkPng, PNG_SIGNATURE } from './png.ts'
import { checkWebp } from './webp.ts'

/**
 * Strict image validation, in our own code and structural only (docs/design.md): the format is
 * proved from the bytes, the headers' dimensions are capped before anything looks at the
 * pixels, and the container is walked to its end, so truncated files and (for PNG and
 * WebP) trailing data are refused. Nothing is decoded. Pure: no I/O, never throws on any
 * input; a refusal is a value carrying a message for the caller.
 */

export const IMAGE_FORMATS = {
  png: { mimeType: 'image/png', extension: 'png', name: 'PNG' },
  jpeg: { mimeType: 'image/jpeg', extension: 'jpg', name: 'JPEG' },
  webp: { mimeType: 'image/webp', extension: 'webp', name: 'WebP' },
  gif: { mimeType: 'image/gif', extension: 'gif', name: 'GIF' },
} as const

export type ImageFormat = keyof typeof IMAGE_FORMATS

export interface ImageInfo {
  format: ImageFormat
  mimeType: (typeof IMAGE_FORMATS)[ImageFormat]['mimeType']
  extension: (typeof IMAGE_FORMATS)[ImageFormat]['extension']
  width: number
  height: number
}

export type ImageCheck = { ok: true; image: ImageInfo } | { ok: false; reason: string }

export interface ImageLimits extends PixelLimits {
  maxBytes: number
}

/** At most 50 megapixels per image or frame and 250 over all frames of an animation. */
export const DEFAULT_IMAGE_LIMITS: ImageLimits = {
  maxBytes: LIMITS.imageBytes,
  maxPixels: 50_000_000,
  maxTotalPixels: 250_000_000,
}

const RIFF = ascii('RIFF')
const WEBP = ascii('WEBP')
const GIF87 = ascii('GIF87a')
const GIF89 = ascii('GIF89a')

/** The format the leading bytes claim, or undefined. The checker then proves the claim. */
export function sniffFormat(b: Uint8Array): ImageFormat | undefined {
  if (startsWith(b, 0, PNG_SIGNATURE)) return 'png'
  if (startsWith(b, 0, [0xff, 0xd8, 0xff])) return 'jpeg'
  if (startsWith(b, 0, RIFF) && startsWith(b, 8, WEBP)) return 'webp'
  if (startsWith(b, 0, GIF87) || startsWith(b, 0, GIF89)) return 'gif'
  return undefined
}

const CHECKERS: Record<ImageFormat, (b: Uint8Array, limits: PixelLimits) => Dimensions> = {
  png: checkPng,
  jpeg: checkJpeg,
  webp: checkWebp,
  gif: checkGif,
}

export function validateImage(
  bytes: Uint8Array,
  limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
): ImageCheck {
  if (bytes.length === 0) return { ok: false, reason: 'the image is empty' }
  if (bytes.length > limits.maxBytes) {
    return {
      ok: false,
      reason: `the image is ${bytes.length.toLocaleString('en')} bytes; the limit is ${limits.maxBytes.toLocaleString('en')} bytes (3 MB) decoded`,
    }
  }
  const format = sniffFormat(bytes)
  if (!format) {
    return {
      ok: false,
      reason: 'the bytes are not a PNG, JPEG, WebP or GIF image (no known signature)',
    }
  }
  const { name, mimeType, extension } = IMAGE_FORMATS[format]
  try {
    const { width, height } = CHECKERS[format](bytes, limits)
    return { ok: true, image: { format, mimeType, extension, width, height } }
  } catch (error) {
    // Only the checkers' own refusals are values; anything else is a bug and stays loud.
    if (error instanceof InvalidImage)
      return { ok: false, reason: `not a valid ${name}: ${error.message}` }
    throw error
  }
}
