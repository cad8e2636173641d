/**
 * Progress of an eval run. On a terminal: one line redrawn in place (bar, done/total,
 * accuracy so far, rate, ETA, tokens, cost). Elsewhere (CI logs, `| tee`): a plain line
 * every few seconds. Only counts go out — never item ids, questions or answers, so a log
 * shipped off the machine carries no patient text.
 */
export interface ProgressState {
  total: number;
  /** Records finished before this session (resume). */
  resumed: number;
  /** Finished in this session. */
  done: number;
  correct: number;
  failed: number;
  tokens: number;
  costUsd: number;
  elapsedMs: number;
  /** Effective item concurrency (lowered under rate limiting). */
  concurrency?: number;
  /** Some model of the run has no price: its calls are not in costUsd. */
  unpriced?: boolean;
}

function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

function tokens(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : String(n);
}

/** The numbers of a progress line, without the bar. */
export function progressText(s: ProgressState): string {
  const finished = s.resumed + s.done;
  const rate = s.elapsedMs > 0 ? s.done / (s.elapsedMs / 1000) : 0;
  const left = s.total - finished;
  const eta = left <= 0 ? "0s" : rate > 0 ? duration((left / rate) * 1000) : "?";
  const acc = finished > 0 ? `${((s.correct / finished) * 100).toFixed(1)}%` : "—";
  const parts = [
    `${finished}/${s.total}`,
    `acc ${acc}`,
    `failed ${s.failed}`,
    `${rate.toFixed(2)} items/s`,
    `ETA ${eta}`,
    `${tokens(s.tokens)} tok`,
    s.unpriced ? (s.costUsd > 0 ? `$${s.costUsd.toFixed(4)} + unpriced` : "unpriced") : `$${s.costUsd.toFixed(4)}`,
  ];
  if (s.concurrency !== undefined) parts.push(`conc ${s.concurrency}`);
  return parts.join(" · ");
}

export function progressBar(finished: number, total: number, width = 24): string {
  const f = total <= 0 ? width : Math.round((Math.min(finished, total) / total) * width);
  return `[${"█".repeat(f)}${"░".repeat(width - f)}]`;
}

export interface ProgressSink {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export class ProgressReporter {
  private timer: NodeJS.Timeout | null = null;
  private lastLog = -Infinity;
  private lastDraw = -Infinity;

  constructor(
    private readonly sink: ProgressSink,
    private readonly state: () => ProgressState,
    private readonly opts: { intervalMs?: number; now?: () => number } = {},
  ) {}

  private get tty(): boolean {
    return this.sink.isTTY === true;
  }

  start(): void {
    // A terminal is redrawn often (ETA moves even when nothing finishes); a log only every few seconds.
    const every = this.tty ? 500 : (this.opts.intervalMs ?? 5000);
    this.timer = setInterval(() => this.tick(), every);
    this.timer.unref();
    this.tick();
  }

  /**
   * Called when an item finishes: a terminal redraws at once, at most ten times a second (at a
   * hundred items a second a redraw per item is terminal output the eye cannot follow); a log
   * waits for its interval. The timer shows the last count.
   */
  update(): void {
    if (!this.tty) return;
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastDraw < 100) return;
    this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const s = this.state();
    if (this.tty) this.draw("\n");
    else this.sink.write(`[eval] finished ${progressText(s)}\n`);
  }

  private tick(): void {
    if (this.tty) return this.draw();
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastLog < (this.opts.intervalMs ?? 5000) - 50) return;
    this.lastLog = now;
    this.sink.write(`[eval] ${progressText(this.state())}\n`);
  }

  private draw(end = ""): void {
    this.lastDraw = (this.opts.now ?? Date.now)();
    const s = this.state();
    let line = `${progressBar(s.resumed + s.done, s.total)} ${progressText(s)}`;
    const cols = this.sink.columns ?? 120;
    if (line.length > cols - 1) line = line.slice(0, cols - 1);
    // \r + erase line: redraw in place instead of scrolling.
    this.sink.write(`\r\x1b[2K${line}${end}`);
  }
}
