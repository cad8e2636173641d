/**
 * What every scripted provider route reads the same way: the agent marker a medmmv prompt
 * carries (how a request is routed to its scenario), and the four-characters-a-token count.
 */
export const AGENT_MARKER = /medmmv-agent:\s*([a-z0-9-]+)/;

/** Four characters a token, as every scripted route counts. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}
