const ENTITIES: Record<string, string> = { nbsp: " ", lt: "<", gt: ">", quot: '"', apos: "'", "#39": "'", amp: "&" };
/** Tags after which a reader sees a new line. */
const BREAKS = /^\/?(br|p|div|tr|li|h[1-6]|table|ul|ol)\b/i;

/**
 * XHTML (a narrative, an HTML attachment) as the text a reader sees: markup, scripts and
 * styles dropped. A single forward scan with indexOf, never a backtracking pattern, so an
 * unclosed `<script` or a run of `<` costs one pass, not one pass per bracket.
 */
export function htmlText(html: string): string {
  const out: string[] = [];
  const lower = html.toLowerCase();
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf("<", at);
    if (open < 0) {
      out.push(html.slice(at));
      break;
    }
    out.push(html.slice(at, open));
    const close = html.indexOf(">", open + 1);
    if (close < 0) break; // an unclosed tag: the rest is markup
    const tag = html.slice(open + 1, close);
    const raw = /^(script|style)\b/i.exec(tag)?.[1]?.toLowerCase();
    if (raw) {
      const end = lower.indexOf(`</${raw}`, close + 1);
      if (end < 0) break;
      const endClose = html.indexOf(">", end);
      at = endClose < 0 ? html.length : endClose + 1;
      out.push(" ");
      continue;
    }
    out.push(BREAKS.test(tag) ? "\n" : " ");
    at = close + 1;
  }
  return out.join("").replace(/&(nbsp|lt|gt|quot|apos|#39|amp);/g, (_, e: string) => ENTITIES[e]!);
}
