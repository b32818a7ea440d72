/**
 * Imported before every test file (scripts/test.mjs): waits for the backend QKV_BACKEND names to load, so a
 * backend that loads asynchronously (webgpu) is the current one before the file's first op.
 */
import { backendReady } from '../../src/backend/backend.ts';
import '../../src/backend/backends.ts';

await backendReady();
