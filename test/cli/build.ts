import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

let built = false;

/** Builds the package once per test process, so the CLI under test is the real `dist/`. */
export function buildOnce(): void {
  if (built) return;
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: join(import.meta.dirname, '..', '..'), stdio: 'inherit' });
  built = true;
}
