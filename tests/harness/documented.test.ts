import { describe, expect, it } from 'vitest';
import { call, registerUser, testServer } from './http.js';
import { answersOf, templateOf, undocumentedAnswers, undocumentedIn } from './documented.js';

// The check every test server runs as it closes: each status an operation answered is on that
// operation in the document. Here it is shown to catch what it must, and to leave alone what the
// document states as general rules.
describe('answers checked against the document when a test server closes', () => {
  const doc = {
    paths: {
      '/v1/links/{link_id}': { get: { responses: { 200: {}, 404: {} } } },
      '/v1/links/{link_id}/assets': { get: { responses: { 200: {} } } },
      '/v1/links': { get: { responses: { 200: {} } }, post: { responses: { 201: {} } } },
      '/v1/discovery/lookup': { get: { responses: { 200: {}, '4XX': {} } } },
    },
  };

  it('finds the template a path falls under, the most literal first', () => {
    expect(templateOf(doc, '/v1/links/abc')).toBe('/v1/links/{link_id}');
    expect(templateOf(doc, '/v1/links/abc/assets')).toBe('/v1/links/{link_id}/assets');
    expect(templateOf(doc, '/v1/links')).toBe('/v1/links');
    expect(templateOf(doc, '/v1/links/')).toBeNull();
    expect(templateOf(doc, '/docs')).toBeNull();
  });

  it('flags a status its operation does not list, and nothing else', () => {
    expect(
      undocumentedIn(doc, [
        { method: 'GET', path: '/v1/links/abc', status: 404 },
        { method: 'GET', path: '/v1/links/abc', status: 410 },
        { method: 'GET', path: '/v1/links/abc/assets', status: 400 },
        { method: 'GET', path: '/v1/links/abc/assets', status: 400 },
        { method: 'POST', path: '/v1/links', status: 201 },
        // A range stands for its statuses.
        { method: 'GET', path: '/v1/discovery/lookup', status: 418 },
        { method: 'GET', path: '/v1/discovery/lookup', status: 500 },
        // General rules of the document, not an operation's: unknown paths, unlisted methods (405).
        { method: 'GET', path: '/no/such/path', status: 404 },
        { method: 'DELETE', path: '/v1/links', status: 405 },
      ]),
    ).toEqual([
      'GET /v1/discovery/lookup answered 500, which its operation does not list',
      'GET /v1/links/{link_id} answered 410, which its operation does not list',
      'GET /v1/links/{link_id}/assets answered 400, which its operation does not list',
    ]);
  });

  it("records a real server's answers, which its own document lists", async () => {
    const s = await testServer();
    try {
      const u = await registerUser(s.app);
      await call(s.app, 'GET', '/quota', { token: u.access_token });
      await call(s.app, 'GET', '/quota', { token: 'not-a-token' });
      await call(s.app, 'HEAD', '/quota', { token: u.access_token });
      const answers = answersOf(s.app);
      expect(answers).toEqual(
        expect.arrayContaining([
          { method: 'GET', path: '/quota', status: 200 },
          { method: 'GET', path: '/quota', status: 401 },
          { method: 'HEAD', path: '/quota', status: 200 },
        ]),
      );
      expect(await undocumentedAnswers(s.app)).toEqual([]);
      // The same answers against a document that forgot the 401: caught.
      const served = (await call(s.app, 'GET', '/openapi.json', { version: null })).body;
      delete served.paths['/quota'].get.responses['401'];
      expect(undocumentedIn(served, answers)).toEqual(['GET /quota answered 401, which its operation does not list']);
    } finally {
      await s.close();
    }
  });
});
