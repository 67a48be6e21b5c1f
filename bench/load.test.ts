import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerEnd, runLoad } from './load.js';

describe('answerEnd', () => {
  const answer = (text: string) => Buffer.from(text, 'latin1');

  it('waits for the whole body a content-length announces', () => {
    const whole = 'HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello';
    expect(answerEnd(answer(whole.slice(0, -1)))).toBeNull();
    expect(answerEnd(answer(whole))).toEqual({ end: whole.length, status: 201 });
  });

  it('reads a chunked body to its last chunk, and no further', () => {
    const whole = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\na\r\n0123456789\r\n0\r\n\r\n';
    expect(answerEnd(answer(whole.slice(0, -2)))).toBeNull();
    expect(answerEnd(answer(`${whole}HTTP/1.1 204`))).toEqual({ end: whole.length, status: 200 });
  });

  it('takes an answer with neither as ending with its head', () => {
    const head = 'HTTP/1.1 304 Not Modified\r\netag: "x"\r\n\r\n';
    expect(answerEnd(answer(`${head}HTTP/1.1`))).toEqual({ end: head.length, status: 304 });
  });

  it('waits for the head to end', () => {
    expect(answerEnd(answer('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n'))).toBeNull();
  });
});

describe('runLoad', () => {
  let server: Server;
  let url: string;
  const seen: { path: string; body: string; auth: string | undefined }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ path: req.url!, body, auth: req.headers.authorization });
        if (req.url === '/chunked') {
          res.write('part one');
          res.end('part two');
          return;
        }
        res.statusCode = req.url === '/missing' ? 404 : 200;
        res.end(JSON.stringify({ path: req.url }));
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const address = server.address() as { port: number };
    url = `http://127.0.0.1:${address.port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('counts answers by status, sends each listed request with its headers and body, and builds bodies per send', async () => {
    seen.length = 0;
    let n = 0;
    const result = await runLoad({
      url: `${url}/plain`,
      headers: { authorization: 'Bearer shared' },
      connections: 3,
      seconds: 0.5,
      requests: [
        { method: 'POST', path: '/posted', body: '{"a":1}' },
        { path: '/missing', headers: { authorization: 'Bearer own' } },
        { path: '/chunked' },
        { method: 'POST', path: '/made', setupRequest: (req) => ({ ...req, body: `{"n":${n++}}` }) },
      ],
    });
    const counted = Object.values(result.statuses).reduce((a, b) => a + b, 0);
    expect(result.errors).toBe(0);
    expect(result.ok).toBeGreaterThan(20);
    expect(result.non2xx).toBe(result.statuses['404']);
    expect(result.ok + result.non2xx).toBe(counted);
    // Every answer counted was asked for; some asked for as the run ended were not counted.
    expect(seen.length).toBeGreaterThanOrEqual(counted);
    expect(seen.find((s) => s.path === '/posted')).toMatchObject({ body: '{"a":1}', auth: 'Bearer shared' });
    expect(seen.find((s) => s.path === '/missing')).toMatchObject({ auth: 'Bearer own' });
    const made = seen.filter((s) => s.path === '/made').map((s) => JSON.parse(s.body).n as number);
    expect(new Set(made).size).toBe(made.length);
    expect(result.p99).toBeGreaterThanOrEqual(result.p50);
  });

  it('counts a connection the server drops while a request waits as an error, and goes on', async () => {
    const dropping = createServer((req, res) => {
      if (req.url === '/drop') req.socket.destroy();
      else res.end('ok');
    });
    await new Promise<void>((done) => dropping.listen(0, '127.0.0.1', done));
    const { port } = dropping.address() as { port: number };
    const result = await runLoad({
      url: `http://127.0.0.1:${port}/`,
      connections: 2,
      seconds: 0.5,
      requests: [{ path: '/drop' }, { path: '/fine' }],
    });
    await new Promise<void>((done) => dropping.close(() => done()));
    expect(result.errors).toBeGreaterThan(0);
    expect(result.ok).toBeGreaterThan(0);
  });
});
