import { startBare, measure } from './lib.js';
const bare = await startBare(18450);
for (let i = 0; i < 3; i++) for (const g of ['sockets', 'autocannon'] as const) {
  const c0 = process.cpuUsage();
  const f = await measure({ url: `${bare.url}/bare`, seconds: 3, connections: Number(process.env.C ?? 20) }, g);
  const c = process.cpuUsage(c0);
  console.log(g, Math.round(f.rps), 'p50', f.p50, 'p99', f.p99, 'cpu/ans', ((c.user + c.system) / (f.ok)).toFixed(1), 'user', (c.user/f.ok).toFixed(1));
}
await bare.stop();
