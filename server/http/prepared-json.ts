/**
 * Answers whose JSON text is already made. A large answer read again and again (get_board:
 * 1.6 MB for 2,000 cards, and `activity`) cost more to stringify and encode than to
 * compute; a cached part keeps its text as UTF-8 bytes beside its value, and an answer
 * composed of such parts is sent as those bytes (sendJson), never stringified again. The
 * value is still there, unchanged, for whoever needs it (MCP's structured content).
 * Prepared values are shared between answers: nobody may change one.
 */
export interface PreparedJson<T> {
  readonly value: T
  /** The UTF-8 text of `value`, in pieces sent one after another. */
  readonly chunks: readonly Buffer[]
}

const texts = new WeakMap<object, readonly Buffer[]>()
/** Parts made here (so a member that merely looks like one is never taken for one). */
const parts = new WeakSet<object>()

/** A value and its JSON text (which must be JSON.stringify(value)). */
export function prepareJson<T>(value: T, text: string): PreparedJson<T> {
  const part = { value, chunks: [Buffer.from(text)] }
  parts.add(part)
  return part
}

/**
 * An object made of members, some of them prepared, and its text, joined from theirs.
 * Members that are undefined are left out, as JSON.stringify leaves them out.
 */
export function prepareObject<T extends object>(
  members: {
    [K in keyof T]: T[K] | PreparedJson<T[K]>
  },
): T {
  const value: Record<string, unknown> = {}
  const chunks: Buffer[] = []
  for (const [name, member] of Object.entries(members)) {
    if (member === undefined) continue
    chunks.push(Buffer.from(`${chunks.length === 0 ? '{' : ','}${JSON.stringify(name)}:`))
    if (isPrepared(member)) {
      value[name] = member.value
      chunks.push(...member.chunks)
    } else {
      value[name] = member
      chunks.push(Buffer.from(JSON.stringify(member)))
    }
  }
  chunks.push(Buffer.from(chunks.length === 0 ? '{}' : '}'))
  texts.set(value, chunks)
  return value as T
}

function isPrepared(v: unknown): v is PreparedJson<unknown> {
  return typeof v === 'object' && v !== null && parts.has(v)
}

/** The text of an object made by prepareObject, if it was made so. */
export function preparedText(body: unknown): readonly Buffer[] | undefined {
  return typeof body === 'object' && body !== null ? texts.get(body) : undefined
}
