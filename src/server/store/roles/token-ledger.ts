/**
 * Token ledger: the single-use token ids already seen, so a replayed CDS Hooks JWT is
 * refused by every process sharing the store, not just the one that saw it first. Only the
 * CDS Hooks JWT check uses it.
 */

export interface TokenLedger {
  /**
   * Record one use of a single-use token id (a CDS Hooks JWT's issuer and `jti`), atomically
   * across every process on the store: true the first time, false when it was already
   * recorded and has not expired by `nowMs` (a replay). Kept until `expiresAtMs` (the
   * token's own expiry plus clock tolerance), after which the row is pruned.
   */
  useTokenId(issuer: string, tokenId: string, expiresAtMs: number, nowMs: number): Promise<boolean>;
}
