import type { z } from 'zod'

/** One row of the action table. */
export interface ActionSpec<
  S extends z.ZodType = z.ZodType,
  O extends z.ZodType = z.ZodType,
  L extends boolean = boolean,
> {
  input: S
  /** What it answers on success (shared/schemas/outputs.ts). */
  output: O
  /** What an agent reads as the MCP tool's description: how to use the action well. */
  description: string
  /**
   * Refused with 409 while someone else holds the card (delete_column: while anyone holds a
   * card in the column). Enforced from this flag alone, by server/claims/gate.ts.
   */
  claimLocked: L
  /** Changes state (takes the identity params). */
  write: boolean
  /**
   * May change or remove what is there (MCP's destructiveHint); false when it only adds.
   * Reads are never destructive.
   */
  destructive: boolean
  /** Calling it again with the same arguments changes nothing more (MCP's idempotentHint). */
  idempotent: boolean
}

export const spec = <S extends z.ZodType, O extends z.ZodType, const L extends boolean>(
  s: ActionSpec<S, O, L>,
) => s
