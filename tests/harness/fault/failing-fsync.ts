/**
 * Loaded into a server process with `--import` by the fsync fault test: once the file named by
 * SR_FAULT_FSYNC_FLAG exists, every asynchronous fsync fails with EIO, as a dying disk's would.
 * The group commit's WAL fsync is the one it reaches (node:fs's ESM bindings are re-synced).
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const flag = process.env.SR_FAULT_FSYNC_FLAG;
const realFsync = fs.fsync;
fs.fsync = ((fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => {
  if (flag && fs.existsSync(flag)) {
    process.nextTick(
      callback,
      Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' }),
    );
    return;
  }
  realFsync(fd, callback);
}) as typeof fs.fsync;
syncBuiltinESMExports();
