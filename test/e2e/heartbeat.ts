/**
 * A requestAnimationFrame heartbeat on a page's main thread (issue 63): from a user's action until the page is
 * still, every frame's time is recorded; the longest gap between two frames (or between the action and the first
 * frame) is how long the page was frozen. A MutationObserver on the whole document says when the page last
 * changed. The page is still once it has not changed for QUIET_MS; what counts is every gap that begins before
 * the page's last change (or the end of the action, a scroll) is a frame budget old: the freeze of drawing that
 * last change is counted, a stall of a page with nothing left to do (the machine's load) is not, and is reported
 * apart (`idleGap`). The page-side code is a string: tsx would add helpers to a function's text that the page does
 * not have.
 */
import type { Page } from 'playwright-core';

/** How long the page must go without a DOM change to count as still. */
export const QUIET_MS = 1500;

/** After the page's last change, how long its rendering may take before a gap is the idle page's, not its work's. */
export const SETTLE_MS = 100;

/** What one heartbeat measured, in ms from its start. */
export interface Beat {
  /** The longest time between two frames (the start counts as a frame) that began while the page had work. */
  gap: number;
  /** When that gap began, from the start. */
  gapAt: number;
  /** When the page last changed, from the start. */
  lastChange: number;
  /** The longest gap that began later, while the page waited with nothing to do (not the page's: the machine's). */
  idleGap: number;
  /** Frames seen. */
  frames: number;
}

const START = `(() => {
  const b = { frames: [], start: performance.now(), last: performance.now(), actEnd: performance.now(), on: true };
  globalThis.qkvBeat = b;
  const beat = () => {
    b.frames.push(performance.now());
    if (b.on) requestAnimationFrame(beat);
  };
  requestAnimationFrame(beat);
  b.observer = new MutationObserver(() => { b.last = performance.now(); });
  b.observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
})()`;

const ACT_DONE = `globalThis.qkvBeat.actEnd = performance.now()`;

const STOP = `(() => {
  const b = globalThis.qkvBeat;
  b.on = false;
  b.observer.disconnect();
  const ts = [b.start, ...b.frames.filter((t) => t >= b.start)];
  const busyUntil = Math.max(b.last, b.actEnd) + ${SETTLE_MS};
  let gap = 0;
  let gapAt = 0;
  let idleGap = 0;
  for (let i = 1; i < ts.length; i++) {
    const d = ts[i] - ts[i - 1];
    if (ts[i - 1] >= busyUntil) idleGap = Math.max(idleGap, d);
    else if (d > gap) {
      gap = d;
      gapAt = ts[i - 1] - b.start;
    }
  }
  return { gap, gapAt, lastChange: b.last - b.start, idleGap, frames: ts.length - 1 };
})()`;

/** An attribute the page sets when its work is done (e.g. `#view-generate`'s data-generated is '1'). */
export interface Done {
  selector: string;
  attribute: string;
  value: string;
}

/**
 * Starts the heartbeat, runs `act` (the user's action: a click, scrolling), waits until `done` holds (when
 * given) and the page has not changed for QUIET_MS, then stops the heartbeat: what it measured.
 */
export async function heartbeat(page: Page, act: () => Promise<void>, done?: Done, timeout = 120_000): Promise<Beat> {
  await page.evaluate(START);
  await act();
  await page.evaluate(ACT_DONE);
  // A function, not a string: the explorer's CSP forbids eval.
  await page.waitForFunction(
    ([d, quiet]) =>
      (d === null || document.querySelector(d.selector)?.getAttribute(d.attribute) === d.value) &&
      performance.now() - (globalThis as unknown as { qkvBeat: { last: number } }).qkvBeat.last > quiet,
    [done ?? null, QUIET_MS] as const,
    { polling: 100, timeout },
  );
  return (await page.evaluate(STOP)) as Beat;
}

/** One line for a failed bound or a record: the gap, when it began, when the page went still, the idle gap. */
export function describeBeat(b: Beat): string {
  return (
    `longest frame gap ${b.gap.toFixed(0)} ms (from ${b.gapAt.toFixed(0)} ms), page still after ` +
    `${b.lastChange.toFixed(0)} ms, ${b.frames} frames; idle after that: longest gap ${b.idleGap.toFixed(0)} ms`
  );
}
