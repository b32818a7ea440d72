/** The progress bars of long commands: on stderr, redrawn in place on a terminal, a line every 15 s otherwise. */
import cliProgress from 'cli-progress';

export function progressBar(format: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar({
    format,
    stream: process.stderr,
    noTTYOutput: !process.stderr.isTTY,
    notTTYSchedule: 15000,
    etaBuffer: 50,
    hideCursor: true,
  }, cliProgress.Presets.shades_classic);
}
