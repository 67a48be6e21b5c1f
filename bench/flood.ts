/**
 * The sign-in flood of the storm mode, in a process of its own (`node --import tsx bench/flood.ts`),
 * so that its 300 connections do not slow the measuring process's own clients (the legitimate
 * sign-in, the authenticated GET): in one event loop with them, they got two tries a round.
 * FLOOD_URL, FLOOD_ADDRESSES (JSON list), FLOOD_CONNECTIONS, FLOOD_SECONDS; FLOOD_SOURCES, how many
 * client addresses the connections come from (127.0.0.2 and up, in turn; 0: the system's choice,
 * 127.0.0.1, the legitimate client's own); prints one JSON line with the answers by status.
 */
import { measure, PASSWORD, VERSION } from './lib.js';

const url = process.env.FLOOD_URL!;
const addresses = JSON.parse(process.env.FLOOD_ADDRESSES!) as string[];
const sources = Number(process.env.FLOOD_SOURCES ?? 0);
const localAddresses = Array.from({ length: sources }, (_, i) => `127.0.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`);
let next = 0;
const f = await measure({
  ...(localAddresses.length > 0 ? { localAddresses } : {}),
  url: `${url}/v1/auth/login`,
  connections: Number(process.env.FLOOD_CONNECTIONS),
  seconds: Number(process.env.FLOOD_SECONDS),
  requests: [
    {
      method: 'POST',
      path: '/v1/auth/login',
      headers: { 'content-type': 'application/json', 'x-svc-protocol': VERSION },
      setupRequest: (req: Record<string, unknown>) => ({
        ...req,
        body: JSON.stringify({ address: addresses[next++ % addresses.length], password: PASSWORD }),
      }),
    },
  ],
});
process.stdout.write(`${JSON.stringify(f)}\n`);
