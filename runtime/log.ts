// Structured JSON logs on stdout (journald keeps them); one logger per process.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, level: string): Logger {
  return pino({ name, level, base: { pid: process.pid } });
}
