import { z } from 'zod'
import { LIMITS } from '../constants.ts'
import { id, text, writeParams } from './common.ts'

/**
 * How images travel (specification, Images): bytes as plain base64 in `imageBase64`,
 * never a URL, never a `data:` prefix, no whitespace or newlines, at most 3 MB decoded.
 * These checks are on the text only; the server proves the format from the decoded bytes.
 */

const IMAGE_MB = LIMITS.imageBytes / (1024 * 1024)

/** Character classes of plain base64, by char code: one pass over megabytes, no regex. */
const DIGIT = 1
const PAD = 2
const SPACE = 3
const CLASSES = (() => {
  const t = new Uint8Array(128)
  for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') {
    t[c.charCodeAt(0)] = DIGIT
  }
  t['='.charCodeAt(0)] = PAD
  for (const c of ' \t\n\r\f\v') t[c.charCodeAt(0)] = SPACE
  return t
})()

/** What is wrong with a base64 text, or undefined when it is plain, padded base64. */
function base64Problem(s: string): 'space' | 'invalid' | undefined {
  let pads = 0
  let invalid = false
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i)
    const kind = code < 128 ? CLASSES[code] : 0
    if (kind === SPACE || (code >= 128 && /\s/.test(s.charAt(i)))) return 'space'
    if (kind === PAD) pads++
    else if (kind !== DIGIT || pads > 0) invalid = true
  }
  return invalid || pads > 2 || s.length % 4 !== 0 ? 'invalid' : undefined
}

/** Bytes a plain base64 text decodes to (its length is a multiple of 4). */
export function base64DecodedLength(s: string): number {
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0
  return (s.length / 4) * 3 - padding
}

export const imageBase64 = z
  .string({
    error: (i) =>
      i.input === undefined
        ? 'imageBase64 is required: send the image bytes as plain base64'
        : 'imageBase64 must be a string of plain base64',
  })
  .superRefine((s, ctx) => {
    const fail = (message: string) => ctx.addIssue({ code: 'custom', message })
    if (s.length === 0) return fail('imageBase64 is empty: send the image bytes as plain base64')
    if (/^data:/i.test(s)) {
      return fail(
        'imageBase64 must be plain base64 without a "data:" prefix: send only what follows the comma',
      )
    }
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
      return fail(
        'imageBase64 holds a URL: images are sent as bytes in imageBase64 (plain base64), never as URLs',
      )
    }
    const problem = base64Problem(s)
    if (problem === 'space') {
      return fail('imageBase64 must be plain base64 with no whitespace or newlines')
    }
    if (problem === 'invalid') {
      return fail(
        'imageBase64 is not valid base64: only A–Z, a–z, 0–9, "+" and "/", padded with "=" to a multiple of 4 characters',
      )
    }
    const bytes = base64DecodedLength(s)
    if (bytes > LIMITS.imageBytes) {
      return fail(
        `imageBase64 decodes to ${bytes} bytes; an image is at most ${IMAGE_MB} MB (${LIMITS.imageBytes} bytes) decoded, and is never resized`,
      )
    }
  })
  .describe(`The image as plain base64 (PNG, WebP, JPEG or GIF; ${IMAGE_MB} MB at most).`)

/** A label for a screenshot, 1–100 characters; the server reduces it to safe characters. */
export const filename = text('filename', LIMITS.filename.min, LIMITS.filename.max).describe(
  'A label for the screenshot.',
)

/**
 * attach_screenshot: stores the image privately on the card (no URL in the reply; get_task
 * gives short-lived links and the bytes). Not claim locked; not idempotent (each call adds
 * an attachment). 404 for a missing or foreign card.
 */
export const attach_screenshot = writeParams({
  taskId: id('taskId'),
  imageBase64,
  filename: filename.optional(),
})
