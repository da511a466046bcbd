// Structured JSON logs on stdout (journald keeps them).
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ name: 'audience-bridge', level, base: { pid: process.pid } });
}
