import type { Logger } from '../ports/logger.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  event: string;
  fields: Record<string, unknown>;
}

/** Keeps log lines in memory so tests can assert on them (and that no secret appears). */
export class MemoryLogger implements Logger {
  readonly lines: LogLine[] = [];
  info(event: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'info', event, fields });
  }
  warn(event: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'warn', event, fields });
  }
  error(event: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'error', event, fields });
  }
}
