import { describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import {
  applyToJson,
  carry,
  docJson,
  editsToCarry,
  generationOf,
  mergeText,
  rebuilt,
} from '../../shared/rebase.ts'

const ORG = '00000000-0000-4000-8000-000000000001'
const BOARD = `${ORG}/board`
const CARD = `${ORG}/tasks/00000000-0000-4000-8000-0000000000aa`
const MAP = `${ORG}/maps/00000000-0000-4000-8000-0000000000bb`

/** A server's document and a replica that synced it. */
function synced(build: (doc: Y.Doc) => void) {
  const server = new Y.Doc()
  build(server)
  const replica = new Y.Doc()
  Y.applyUpdate(replica, Y.encodeStateAsUpdate(server))
  return { server, replica }
}

const sv = (doc: Y.Doc) => Y.decodeStateVector(Y.encodeStateVector(doc))

function card(doc: Y.Doc, id: string, title: string) {
  const m = new Y.Map<unknown>()
  m.set('title', title)
  m.set('columnId', 'c1')
  boardMaps(doc).tasks.set(id, m)
}

describe('carrying edits across a re-base, by key', () => {
  test("three-way text merge: the replica's change is made where the rest still reads the same, and wins where both changed the same span", () => {
    expect(mergeText('Hello world', 'Hello brave world', 'Hello world!')).toBe('Hello brave world!')
    expect(mergeText('abc', 'abc', 'xyz')).toBe('xyz')
    expect(mergeText('abc', 'abXc', 'abc')).toBe('abXc')
    expect(mergeText('one two three', 'one 2 three', 'one TWO three')).toBe('one 2 three')
    expect(mergeText('a long line', 'a long line.', 'Prefix: a long line')).toBe(
      'Prefix: a long line.',
    )
  })

  test("a rebuilt generation holds the same state and none of the old one's history", () => {
    const doc = new Y.Doc()
    for (let i = 0; i < 200; i++) card(doc, `t${i}`, `card ${i}`)
    for (let i = 0; i < 190; i++) boardMaps(doc).tasks.delete(`t${i}`)
    const next = rebuilt('board', doc, 3)
    expect(docJson('board', next).tasks).toEqual(docJson('board', doc).tasks)
    expect(generationOf(next)).toBe(3)
    expect(Y.encodeStateAsUpdate(next).length).toBeLessThan(Y.encodeStateAsUpdate(doc).length / 5)
  })

  test("only the replica's own unsent edits are carried: a value it merely missed is not", () => {
    const { server, replica } = synced((d) => {
      card(d, 'a', 'A')
      card(d, 'b', 'B')
    })
    // The server changes a; the replica, offline, changes b and creates c.
    boardMaps(server).tasks.get('a')?.set('title', 'A by the server')
    boardMaps(replica).tasks.get('b')?.set('title', 'B offline')
    card(replica, 'c', 'C offline')
    const edits = editsToCarry(BOARD, docJson('board', server), sv(server), replica)
    expect(edits).toEqual([
      {
        kind: 'field',
        doc: BOARD,
        root: 'tasks',
        key: 'b',
        field: 'title',
        from: 'B',
        to: 'B offline',
      },
      {
        kind: 'entry',
        doc: BOARD,
        root: 'tasks',
        key: 'c',
        value: { title: 'C offline', columnId: 'c1' },
      },
    ])
    const next = rebuilt('board', server, 1)
    expect(carry(next, edits)).toBe(2)
    expect(boardMaps(next).tasks.get('a')?.get('title')).toBe('A by the server')
    expect(boardMaps(next).tasks.get('b')?.get('title')).toBe('B offline')
    expect(boardMaps(next).tasks.get('c')?.get('title')).toBe('C offline')
  })

  test("server-only roots are never carried from a replica; a map's removed node is", () => {
    const { server, replica } = synced((d) => {
      d.getMap('claims').set('a', { holder: 'x' })
      const n = new Y.Map<unknown>()
      n.set('text', 'node')
      d.getMap('nodes').set('n1', n)
    })
    replica.getMap('claims').set('b', { holder: 'forged' })
    expect(editsToCarry(BOARD, docJson('board', server), sv(server), replica)).toEqual([])
    replica.getMap('nodes').delete('n1')
    expect(editsToCarry(MAP, docJson('map', server), sv(server), replica)).toEqual([
      { kind: 'removed', doc: MAP, root: 'nodes', key: 'n1' },
    ])
  })

  test("a description typed offline is carried as text, and a stale replica's text keeps only its own insertions", () => {
    const { server, replica } = synced((d) => d.getText('description').insert(0, 'One. Two.'))
    // The server rewrites the end meanwhile; the replica, which never heard, types at the start.
    server.getText('description').delete(5, 4)
    server.getText('description').insert(5, 'Deux.')
    replica.getText('description').insert(0, 'Zero. ')
    const edits = editsToCarry(CARD, docJson('card', server), sv(server), replica)
    expect(edits).toEqual([
      { kind: 'text', doc: CARD, root: 'description', from: 'One. Two.', to: 'Zero. One. Two.' },
    ])
    const next = rebuilt('card', server, 1)
    carry(next, edits)
    expect(next.getText('description').toString()).toBe('Zero. One. Deux.')
  })

  test("a version-2 board card's description edit goes to the card's document", () => {
    const { server, replica } = synced((d) => {
      const m = new Y.Map<unknown>()
      m.set('title', 'T')
      m.set('description', new Y.Text('Plan.'))
      boardMaps(d).tasks.set('00000000-0000-4000-8000-0000000000aa', m)
    })
    const text = boardMaps(replica)
      .tasks.get('00000000-0000-4000-8000-0000000000aa')
      ?.get('description') as Y.Text
    text.insert(5, ' More.')
    expect(editsToCarry(BOARD, docJson('board', server), sv(server), replica)).toEqual([
      { kind: 'text', doc: CARD, root: 'description', from: 'Plan.', to: 'Plan. More.' },
    ])
  })

  test('the base a re-base records is the final state with the edits made while it was built', () => {
    const base = { tasks: { a: { title: 'A' }, b: { title: 'B' } }, description: 'x' }
    expect(
      applyToJson(base, [
        { kind: 'field', doc: BOARD, root: 'tasks', key: 'a', field: 'title', from: 'A', to: 'A2' },
        { kind: 'removed', doc: BOARD, root: 'tasks', key: 'b' },
        { kind: 'entry', doc: BOARD, root: 'tasks', key: 'c', value: { title: 'C' } },
        { kind: 'text', doc: BOARD, root: 'description', from: 'x', to: 'xy' },
      ]),
    ).toEqual({ tasks: { a: { title: 'A2' }, c: { title: 'C' } }, description: 'xy' })
  })
})
