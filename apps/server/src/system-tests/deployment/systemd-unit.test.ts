import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../config.js';

/**
 * docs/strongroom.service: the compiled server under plain node, hardened so that the data
 * directory is the only place it may write, stopped with SIGTERM and given longer than the drain
 * grace before the SIGKILL. systemd's own parser checks it where systemd-analyze is installed.
 */

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const UNIT = readFileSync(join(ROOT, 'docs/strongroom.service'), 'utf8');
const work = mkdtempSync(join(tmpdir(), 'sr-unit-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Every value of a key in the unit, in order (systemd keys may repeat). */
const values = (key: string): string[] =>
  [...UNIT.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!.trim());
const one = (key: string): string => {
  const all = values(key);
  expect(all, `${key}= appears once`).toHaveLength(1);
  return all[0]!;
};

const environment = Object.fromEntries(
  values('Environment').map((line) => {
    const at = line.indexOf('=');
    return [line.slice(0, at), line.slice(at + 1)];
  }),
);

const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const haveAnalyze = analyze.status === 0;
if (!haveAnalyze) console.log('systemd-analyze verify skipped: systemd-analyze is not installed here');

describe('docs/strongroom.service', () => {
  it('runs the compiled server with node, no npm and no TypeScript loader', () => {
    const start = one('ExecStart').split(/\s+/);
    expect(start[0]).toMatch(/\/node$/);
    expect(start.at(-1)).toMatch(/\/apps\/server\/dist\/main\.js$/);
    expect(start.join(' ')).not.toMatch(/npm|tsx|--import/);
  });

  it('has the hardening on and the data directory as the only writable path', () => {
    expect(one('NoNewPrivileges')).toBe('yes');
    expect(one('ProtectSystem')).toBe('strict');
    expect(one('ProtectHome')).toBe('yes');
    expect(one('PrivateTmp')).toBe('yes');
    expect(one('PrivateDevices')).toBe('yes');
    expect(one('CapabilityBoundingSet')).toBe('');
    expect(values('ReadWritePaths')).toEqual([environment.SVC_DATA_DIR]);
    expect(`/var/lib/${one('StateDirectory')}`).toBe(environment.SVC_DATA_DIR);
    expect(values('User')).toHaveLength(1);
    expect(one('User')).not.toBe('root');
  });

  it('its settings are valid, and it stops with SIGTERM given longer than the drain grace', () => {
    const config = readConfig(environment);
    expect(config.http.shutdownGraceMs).toBeGreaterThan(0);
    expect(one('KillSignal')).toBe('SIGTERM');
    // SIGTERM to the main process only: with workers, the primary drains them itself.
    expect(one('KillMode')).toBe('mixed');
    const stopS = Number(one('TimeoutStopSec'));
    expect(Number.isInteger(stopS)).toBe(true);
    expect(stopS * 1000).toBeGreaterThan(config.http.shutdownGraceMs);
  });

  it.skipIf(!haveAnalyze)('passes systemd-analyze verify with no warning, and a broken copy does not', () => {
    // verify checks that ExecStart's program exists: point it at this machine's node.
    const copy = (text: string) => {
      const file = join(work, 'strongroom.service');
      writeFileSync(file, existsSync('/usr/bin/node') ? text : text.replace('/usr/bin/node', process.execPath));
      return spawnSync('systemd-analyze', ['verify', file], {
        encoding: 'utf8',
        env: { ...process.env, SYSTEMD_LOG_COLOR: '0' },
      });
    };
    const run = copy(UNIT);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr.trim()).toBe('');

    // The same check sees a misspelt hardening option (systemd itself only warns and ignores it).
    const broken = copy(UNIT.replace('ProtectSystem=strict', 'ProtectSytem=strict'));
    expect(broken.stderr).toMatch(/Unknown key 'ProtectSytem'/);
  });
});
