import { registerBackend } from './backend.ts';
import { jsBackend } from './js/index.ts';

// The js backend is always present: it is the reference and the fallback.
registerBackend(jsBackend);
