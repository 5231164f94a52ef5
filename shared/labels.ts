/** Identity an agent sends with claim_task and its writes. */
export interface AgentIdentity {
  agentName?: string | undefined
  house?: string | undefined
  generation?: number | undefined
  isSubChild?: boolean | undefined
}

/** English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 101st, 111th. */
export function ordinal(n: number): string {
  const mod100 = n % 100
  if (mod100 >= 11 && mod100 <= 13) return `${n}th`
  switch (n % 10) {
    case 1:
      return `${n}st`
    case 2:
      return `${n}nd`
    case 3:
      return `${n}rd`
    default:
      return `${n}th`
  }
}

/**
 * The board's label for a claimant, exactly as the specification's table spells it:
 * the name as sent; `<name>, <ordinal> of House <house>`; `<parent>'s underling (House
 * <house>)` for a sub-child (the name sent is the parent's); `An agent` with no name.
 */
export function holderLabel(identity: AgentIdentity): string {
  const { agentName, house, generation, isSubChild } = identity
  if (!agentName) return 'An agent'
  if (house && isSubChild) return `${agentName}'s underling (House ${house})`
  if (house && generation !== undefined)
    return `${agentName}, ${ordinal(generation)} of House ${house}`
  return agentName
}
