import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Collections asked for, on the thread that asks, where waiting for V8 to start one costs
 * memory. What a transfer moves (the database's messages, stored files, the archive's
 * pieces, a request's socket reads) is memory outside the JavaScript heap, freed only when
 * a collection finds its owner dead; the heap itself grows slowly meanwhile, so left alone
 * the collector seldom runs, tens of MB pile up between collections, and glibc's allocator
 * keeps what it once held. The compaction thread lets a large replayed document go before
 * it builds another.
 *
 * A young collection frees what died young (nearly all of it: a chunk lives for one
 * write), in a millisecond or two; a full one also frees what lived long enough to be
 * promoted.
 */
type Gc = (options: { type: 'minor' | 'major'; execution: 'sync' }) => void

let gc: Gc | undefined

function collector(): Gc {
  if (!gc) {
    // The collector's entry point, as `--expose-gc` would give it, for this thread only:
    // a new context made after the flag is set has `gc`.
    setFlagsFromString('--expose-gc')
    gc = runInNewContext('gc') as Gc
  }
  return gc
}

export function collectYoung(): void {
  collector()({ type: 'minor', execution: 'sync' })
}

export function collectAll(): void {
  collector()({ type: 'major', execution: 'sync' })
}

/**
 * Counts bytes as they pass and collects: the young generation every `youngEvery` bytes,
 * everything every `allEvery` (0: never).
 */
export function collectingEvery(youngEvery: number, allEvery: number): (bytes: number) => void {
  let young = 0
  let all = 0
  return (bytes) => {
    young += bytes
    all += bytes
    if (allEvery > 0 && all >= allEvery) {
      all = 0
      young = 0
      collectAll()
    } else if (young >= youngEvery) {
      young = 0
      collectYoung()
    }
  }
}
