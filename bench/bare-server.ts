import { serve } from '@hono/node-server';
import { Hono } from 'hono';

// The baseline: the same framework and server adapter, no work at all.
const app = new Hono();
app.get('/bare', (c) => c.json({ ok: true }));
serve({ fetch: app.fetch, port: Number(process.env.PORT), hostname: '127.0.0.1' });
