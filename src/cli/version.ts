/**
 * qkv's version, from its package.json, found from this module's own place (src/cli or dist/cli) so it works installed.
 */
import { readFileSync } from 'node:fs';

export function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  const pkg = JSON.parse(readFileSync(url, 'utf8')) as { name?: string; version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error(`${url.pathname}: no "version"`);
  return pkg.version;
}
