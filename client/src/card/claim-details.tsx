import type { ClaimRecord } from '../../../shared/records.ts'
import { ClaimLabel } from '../board/card.tsx'
import { LockIcon } from '../ui/icons.tsx'

/** A card's claim, live, lapsed or released: its holder, note and times; admins may force release a live one. */
export function ClaimDetails({
  claim,
  canRelease,
  onRelease,
}: {
  claim: ClaimRecord
  canRelease: boolean
  onRelease: () => void
}) {
  const when = (iso: string) => new Date(iso).toLocaleString()
  const released = claim.status === 'released'
  const endLabel = claim.isLive ? 'Lease ends' : released ? 'Released at' : 'Lapsed at'
  const endedAt = released ? (claim.releasedAt ?? claim.updatedAt) : claim.expiresAt
  return (
    <section
      className={`claim-box ${claim.isLive ? 'claim-box-live' : 'claim-box-lapsed'}`}
      aria-label="Claim"
      data-testid="claim-details"
    >
      <div className="claim-box-head">
        {claim.isLive ? <LockIcon size={14} /> : null}
        <ClaimLabel claim={claim} />
        <span className="muted small">
          {claim.isLive
            ? 'is working on this card'
            : released
              ? 'released the card; it is free'
              : 'claim lapsed; the card is free'}
        </span>
      </div>
      {claim.note && <p className="claim-note">“{claim.note}”</p>}
      <dl className="claim-facts">
        <dt>Started</dt>
        <dd>{when(claim.startedAt)}</dd>
        <dt>Last heartbeat</dt>
        <dd>{when(claim.updatedAt)}</dd>
        <dt>{endLabel}</dt>
        <dd>{when(endedAt)}</dd>
      </dl>
      {claim.isLive && (
        <p className="small">
          While the claim is live nobody else can change the card; comments still work.
          {canRelease ? '' : ' An owner or admin can force release it.'}
        </p>
      )}
      {canRelease && claim.isLive && (
        <button type="button" className="btn btn-danger btn-small" onClick={onRelease}>
          Force release
        </button>
      )}
    </section>
  )
}
