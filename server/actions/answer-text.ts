export interface ImageOfResult {
  attachmentId: string
  mimeType: string
  dataBase64: string
}

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** Screenshots carried as bytes (get_task's `images`), found by shape rather than by name. */
function imagesOf(result: Record<string, unknown>): ImageOfResult[] {
  const images = result.images
  if (!Array.isArray(images)) return []
  return images.filter(
    (i): i is ImageOfResult =>
      isRecord(i) &&
      typeof i.attachmentId === 'string' &&
      typeof i.mimeType === 'string' &&
      typeof i.dataBase64 === 'string',
  )
}

/**
 * A raster image exported as base64 (export_map's PNG: `{ mimeType: 'image/png', content }`),
 * found by shape. An SVG is text, and stays text.
 */
function exportedImageOf(result: Record<string, unknown>): ImageOfResult | undefined {
  const { mimeType, content } = result
  if (typeof mimeType !== 'string' || typeof content !== 'string') return undefined
  if (!mimeType.startsWith('image/') || mimeType === 'image/svg+xml') return undefined
  return { attachmentId: '', mimeType, dataBase64: content }
}

/**
 * The text an answer is read as (a tool's text content): the result as JSON, with the bytes
 * of screenshots (or an exported PNG) left out, as they travel as images. Budgets count this.
 */
export function answerText(result: Record<string, unknown>): {
  text: string
  images: ImageOfResult[]
} {
  const images = imagesOf(result)
  const exported = exportedImageOf(result)
  const sentAs = (base64: string, i: number, of: number) =>
    `(${base64.length} characters of base64, sent as image content ${i + 1} of ${of})`
  let textView: Record<string, unknown> = result
  if (images.length > 0) {
    textView = {
      ...result,
      images: images.map((image, i) => ({
        attachmentId: image.attachmentId,
        mimeType: image.mimeType,
        dataBase64: sentAs(image.dataBase64, i, images.length),
      })),
    }
  } else if (exported) {
    textView = { ...result, content: sentAs(exported.dataBase64, 0, 1) }
  }
  return {
    text: JSON.stringify(textView),
    images: exported && images.length === 0 ? [exported] : images,
  }
}
