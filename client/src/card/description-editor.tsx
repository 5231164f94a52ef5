import { defaultKeymap, indentWithTab } from '@codemirror/commands'
import { markdown } from '@codemirror/lang-markdown'
import { Compartment, EditorState } from '@codemirror/state'
import { EditorView, keymap, placeholder } from '@codemirror/view'
import { useEffect, useRef } from 'react'
import { yCollab, ySyncAnnotation, yUndoManagerKeymap } from 'y-codemirror.next'
import type { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'

/**
 * The description's shared Markdown editor (issue 32): CodeMirror bound to the card
 * document's `description` Y.Text (y-codemirror.next). Everyone's cursor and selection
 * shows with their name and colour (the document's awareness carries `user`), undo takes
 * back only this person's own typing (a Y.UndoManager tracking the binding's edits), and
 * a claimed card's description is read-only. Offline edits are the document's, and merge
 * like the rest.
 */
export function DescriptionEditor({
  hidden,
  text,
  awareness,
  locked,
  max,
  labelledBy,
}: {
  /** Kept under the preview: hidden, with its undo history. */
  hidden: boolean
  text: Y.Text
  awareness: Awareness
  locked: boolean
  max: number
  labelledBy: string
}) {
  const host = useRef<HTMLDivElement>(null)
  const view = useRef<EditorView>(undefined)
  const editable = useRef(new Compartment())
  // Read when the editor is made; a change is applied below without a new editor (which
  // would lose the undo history).
  const lockedAtStart = useRef(locked)
  lockedAtStart.current = locked

  useEffect(() => {
    const parent = host.current
    if (!parent) return
    const undoManager = new Y.UndoManager(text)
    const state = EditorState.create({
      doc: text.toString(),
      extensions: [
        keymap.of([...yUndoManagerKeymap, ...defaultKeymap, indentWithTab]),
        markdown(),
        EditorView.lineWrapping,
        placeholder('Add a description in Markdown… (edited together, live)'),
        EditorView.contentAttributes.of({
          'aria-label': 'Description',
          'aria-labelledby': labelledBy,
          'aria-multiline': 'true',
          role: 'textbox',
        }),
        // The description's limit: typing past it is refused (others' edits always apply).
        EditorState.transactionFilter.of((tr) =>
          tr.docChanged && tr.newDoc.length > max && !tr.annotation(ySyncAnnotation) ? [] : tr,
        ),
        editable.current.of(lockedState(lockedAtStart.current)),
        yCollab(text, awareness, { undoManager }),
      ],
    })
    const v = new EditorView({ state, parent })
    view.current = v
    return () => {
      v.destroy()
      undoManager.destroy()
      view.current = undefined
    }
  }, [text, awareness, max, labelledBy])

  useEffect(() => {
    view.current?.dispatch({ effects: editable.current.reconfigure(lockedState(locked)) })
  }, [locked])

  useEffect(() => {
    // Shown again: CodeMirror measures what it could not while hidden.
    if (!hidden) view.current?.requestMeasure()
  }, [hidden])

  return (
    <div
      ref={host}
      hidden={hidden}
      className="description-editor"
      data-testid="description-editor"
    />
  )
}

function lockedState(locked: boolean) {
  return [EditorState.readOnly.of(locked), EditorView.editable.of(!locked)]
}
