/** Whether ops record themselves for backward(), like torch.is_grad_enabled(). */
let enabled = true;

/** Whether ops record themselves for backward() now (false inside {@link noGrad}), like torch.is_grad_enabled(). */
export function isGradEnabled(): boolean {
  return enabled;
}

/** Run `fn` without recording a graph (inference, optimizer updates), like `with torch.no_grad()`. */
export function noGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = false;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}

/** Run `fn` with recording on, even inside noGrad. */
export function enableGrad<T>(fn: () => T): T {
  const prev = enabled;
  enabled = true;
  try {
    return fn();
  } finally {
    enabled = prev;
  }
}
