import { useSyncExternalStore } from 'react'

/**
 * Who to tell that something changed: the one listener pattern every store of the app
 * shares (React reads them through useSyncExternalStore).
 */
export class Emitter {
  private readonly listeners = new Set<() => void>()

  subscribe = (fn: () => void): (() => void) => {
    this.listeners.add(fn)
    return () => {
      this.listeners.delete(fn)
    }
  }

  emit(): void {
    for (const l of this.listeners) l()
  }

  clear(): void {
    this.listeners.clear()
  }
}

/** One value, read by components with useStore, who re-render whenever it is set. */
export class Store<T> {
  private value: T
  private readonly changed = new Emitter()

  constructor(initial: T) {
    this.value = initial
  }

  get = (): T => this.value

  set(next: T | ((previous: T) => T)): void {
    const value = typeof next === 'function' ? (next as (previous: T) => T)(this.value) : next
    if (Object.is(value, this.value)) return
    this.value = value
    this.changed.emit()
  }

  subscribe = (fn: () => void): (() => void) => this.changed.subscribe(fn)
}

export function useStore<T>(store: Store<T>): T {
  return useSyncExternalStore(store.subscribe, store.get)
}
