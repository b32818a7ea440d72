/**
 * Drawing that keeps the page alive (issue 63). A long text's views are hundreds of thousands of SVG elements:
 * built in one task they froze the page for seconds after the model (in its worker) was long done. Here a
 * picture is drawn in pieces: the first at once, so a small picture is whole when the call returns (as a
 * synchronous draw was), the rest from one queue shared by every view, a few pieces a frame (FRAME_WORK_MS of
 * them, then the frame is given back to the browser to render), so that no frame waits long.
 */
import { nextFrame } from './dom.ts';

/** The drawing done in one frame before the browser renders it: about half a 60 Hz frame. */
export const FRAME_WORK_MS = 8;

/** A drawing in progress: `done` says whether it was drawn whole (false: cancelled first). */
export interface Paced {
  done: Promise<boolean>;
  cancel(): void;
}

interface Job {
  count: number;
  next: number;
  draw(k: number): void;
  finish(whole: boolean): void;
}

const queue: Job[] = [];
let pumping = false;

/** Draws queued pieces, oldest job first, FRAME_WORK_MS a frame, until the queue is empty. */
async function pump(): Promise<void> {
  pumping = true;
  try {
    while (queue.length > 0) {
      await nextFrame();
      const t0 = performance.now();
      while (queue.length > 0 && performance.now() - t0 < FRAME_WORK_MS) {
        const job = queue[0];
        try {
          job.draw(job.next++);
        } catch (e) {
          // A piece that fails ends its picture, not the queue: the error goes to the page's console.
          queue.shift();
          job.finish(false);
          reportError(e);
          continue;
        }
        if (job.next >= job.count) {
          queue.shift();
          job.finish(true);
        }
      }
    }
  } finally {
    pumping = false;
  }
}

/**
 * Draws `count` pieces by calling `draw(k)` for k = 0, 1, …: piece 0 at once unless `later`, the others from the
 * shared queue. `onDone` runs as the last piece is drawn (at once, when there is one piece).
 */
export function paced(count: number, draw: (k: number) => void, onDone?: () => void, later = false): Paced {
  let resolve!: (whole: boolean) => void;
  const done = new Promise<boolean>((r) => {
    resolve = r;
  });
  let finished = false;
  const job: Job = {
    count,
    next: 0,
    draw,
    finish(whole) {
      if (finished) return;
      finished = true;
      if (whole) onDone?.();
      resolve(whole);
    },
  };
  if (!later && count > 0) draw(job.next++);
  if (job.next >= count) job.finish(true);
  else {
    queue.push(job);
    if (!pumping) void pump();
  }
  return {
    done,
    cancel() {
      const at = queue.indexOf(job);
      if (at >= 0) queue.splice(at, 1);
      job.finish(false);
    },
  };
}
