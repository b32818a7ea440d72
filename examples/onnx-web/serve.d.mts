import type { Server } from 'node:http';
export function startServer(o: {
  models: Record<string, string>;
  port?: number;
}): Promise<{ server: Server; url: string }>;
