/** The progress bars of long commands: on stderr, redrawn in place on a terminal, a line every 15 s otherwise. */
import cliProgress from 'cli-progress';

/**
 * Seconds as the bar shows them: `1h05m`, `4m35s`, `42s`. The time is rounded to `multiple` seconds
 * before it is split, so 7,199 s is `2h00m` (cli-progress's own formatter rounds the minutes after
 * splitting and prints `1h60m`). cli-progress passes 'NULL' or 'INF' while the rate is unknown: `?`.
 */
export function formatDuration(t: number | string, multiple = 1): string {
  if (typeof t !== 'number' || !Number.isFinite(t)) return '?';
  const pad = (v: number): string => String(v).padStart(2, '0');
  const s = Math.max(0, t);
  const r = s > 10 ? multiple * Math.round(s / multiple) : Math.round(s);
  if (r >= 3600) {
    const m = Math.round(r / 60);
    return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
  }
  return r >= 60 ? `${Math.floor(r / 60)}m${pad(r % 60)}s` : `${r}s`;
}

export function progressBar(format: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    {
      format,
      stream: process.stderr,
      noTTYOutput: !process.stderr.isTTY,
      notTTYSchedule: 15000,
      etaBuffer: 50,
      hideCursor: true,
      formatTime: (t: number, _options: unknown, multiple: number) => formatDuration(t, multiple),
    },
    cliProgress.Presets.shades_classic,
  );
}
