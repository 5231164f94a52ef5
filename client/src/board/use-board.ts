import { useCallback, useSyncExternalStore } from 'react'
import type { BoardStore } from './board-store.ts'

/** Subscribes a component to one topic of the board store and reads its current answer. */
export function useBoard<T>(store: BoardStore, topic: string, read: (s: BoardStore) => T): T {
  const subscribe = useCallback((fn: () => void) => store.subscribe(topic, fn), [store, topic])
  return useSyncExternalStore(subscribe, () => read(store))
}

export const useCard = (store: BoardStore, id: string) =>
  useBoard(store, `card:${id}`, (s) => s.card(id))
export const useColumnCards = (store: BoardStore, columnId: string) =>
  useBoard(store, `cards:${columnId}`, (s) => s.cardsOf(columnId))
export const useColumns = (store: BoardStore) => useBoard(store, 'columns', (s) => s.columns())
export const useProjects = (store: BoardStore) => useBoard(store, 'projects', (s) => s.projects())
export const useTags = (store: BoardStore) => useBoard(store, 'tags', (s) => s.tags())
