import { useEffect, useState } from 'react'
import type { StoredAttachment } from '../../../shared/card-doc.ts'
import { appApi, type SignedLink } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { TrashIcon } from '../ui/icons.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { type CardStore, useCardAttachments } from './card-store.ts'

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

/**
 * One screenshot. Screenshots are private: each is shown through a short-lived signed
 * link asked for when the card opens, and asked for again before the link expires.
 */
function Shot({ attachment }: { attachment: StoredAttachment }) {
  const { org } = useWorkspace()
  const [link, setLink] = useState<SignedLink>()
  const [error, setError] = useState<string>()

  useEffect(() => {
    let cancelled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const load = async () => {
      try {
        const fresh = await appApi.attachmentLink(org.id, attachment.id)
        if (cancelled) return
        setLink(fresh)
        setError(undefined)
        const left = Date.parse(fresh.expiresAt) - Date.now()
        if (Number.isFinite(left)) timer = setTimeout(load, Math.max(5_000, left - 30_000))
      } catch (e) {
        if (!cancelled) setError(describeError(e))
      }
    }
    void load()
    return () => {
      cancelled = true
      if (timer) clearTimeout(timer)
    }
  }, [org.id, attachment.id])

  const remove = async () => {
    const ok = await confirmDialog({
      title: 'Delete screenshot?',
      message: `“${attachment.filename}” is deleted permanently.`,
      confirmLabel: 'Delete',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.deleteAttachment(org.id, attachment.id)
    } catch (e) {
      toast('error', describeError(e))
    }
  }

  return (
    <li className="shot">
      {link ? (
        <a href={link.url} target="_blank" rel="noreferrer" title={`Open ${attachment.filename}`}>
          <img src={link.url} alt={attachment.filename} loading="lazy" />
        </a>
      ) : (
        <div className="shot-placeholder" title={error}>
          {error ? 'Not available offline' : ''}
        </div>
      )}
      <div className="shot-meta">
        <span className="shot-name" title={attachment.filename}>
          {attachment.filename}
        </span>
        <span className="muted small">{size(attachment.size)}</span>
        <button
          type="button"
          className="icon-btn"
          aria-label={`Delete screenshot ${attachment.filename}`}
          onClick={() => void remove()}
        >
          <TrashIcon size={14} />
        </button>
      </div>
    </li>
  )
}

export function Screenshots({ card }: { card: CardStore }) {
  const stored = useCardAttachments(card)
  if (stored.length === 0) return null
  return (
    <section className="panel-section" aria-labelledby="shots-heading">
      <h3 id="shots-heading">
        Screenshots <span className="muted">{stored.length}</span>
      </h3>
      <ul className="shots">
        {stored.map((a) => (
          <Shot key={a.id} attachment={a} />
        ))}
      </ul>
    </section>
  )
}
