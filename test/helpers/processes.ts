// Child processes a test starts are killed after it, passed or failed: a failed test leaves no
// process behind.
import type { ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';

/** Registers an afterEach that SIGKILLs every process given to the returned function since the last test. */
export function killAfterEach(): <C extends ChildProcess>(child: C) => C {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });
  return (child) => {
    children.push(child);
    return child;
  };
}
