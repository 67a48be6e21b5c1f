import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Hono } from 'hono';

/**
 * The API reference page at /docs: Swagger UI rendering /openapi.json. Every asset comes from the
 * swagger-ui-dist package on this server, so the page works on a box with no way out; the content
 * security policy keeps the browser from asking any other origin for anything.
 */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Strongroom API reference</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to a public validator for its badge.
// requestInterceptor: the page is served by the server it documents, so "Try it out" sends every
// request to the address the page was opened at. The document's own server is SVC_BASE_URL, which
// a reader may have reached under another name (127.0.0.1 for localhost, a LAN address, a proxy);
// the content security policy (connect-src 'self') would refuse that other origin.
const INIT = `window.ui = SwaggerUIBundle({
  requestInterceptor: (req) => {
    const target = new URL(req.url, window.location.href);
    if (target.origin !== window.location.origin) req.url = window.location.origin + target.pathname + target.search;
    return req;
  },
  url: '/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  validatorUrl: null,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  tryItOutEnabled: false,
});
`;

const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function assetDir(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Mounts GET /docs (the page) and its assets under /docs/. Files are read once, on first use. */
export function mountDocs(app: Hono, headers: () => Readonly<Record<string, string>>): void {
  const cache = new Map<string, Uint8Array>();
  const page = (body: string | Uint8Array, type: string, cacheControl: string) =>
    new Response(body as BodyInit, {
      status: 200,
      headers: {
        'content-type': type,
        'cache-control': cacheControl,
        'content-security-policy': POLICY,
        'x-content-type-options': 'nosniff',
        ...headers(),
      },
    });

  app.get('/docs', () => page(PAGE, 'text/html; charset=utf-8', 'no-cache'));
  // One route for every file, init.js included: a static path beside `/docs/:file` would make
  // Hono fall back from its RegExpRouter to the slower TrieRouter for every route (router.test.ts).
  app.get('/docs/:file', (c) => {
    const file = c.req.param('file');
    if (file === 'init.js') return page(INIT, 'text/javascript; charset=utf-8', 'no-cache');
    const type = ASSETS[file];
    if (type === undefined) return c.notFound();
    let bytes = cache.get(file);
    if (!bytes) {
      bytes = new Uint8Array(readFileSync(join(assetDir(), file)));
      cache.set(file, bytes);
    }
    return page(bytes, type, 'public, max-age=3600');
  });
}
