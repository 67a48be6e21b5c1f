/** The GET requests headAnswer makes for a HEAD: a handler may skip opening a body it would not send. */
const standingInForHead = new WeakSet<Request>();

/** Is `request` the GET a HEAD is answered as? (A client cannot make one look so: only headAnswer adds to the set.) */
export function isHeadRequest(request: Request): boolean {
  return standingInForHead.has(request);
}

/**
 * A HEAD request answered as the GET it stands for: same status and headers, no body, and the
 * Content-Length the GET's body has (RFC 9110 §9.3.2). Hono would drop the body but give no length.
 * When the GET states its Content-Length (a blob download, whose body may be gigabytes), that is
 * taken and the body is cancelled unread; only bodies of unstated length are read to be measured.
 */
export async function headAnswer<E, X>(
  dispatch: (request: Request, env: E, ctx: X) => Response | Promise<Response>,
  request: Request,
  env: E,
  ctx: X,
): Promise<Response> {
  const get = new Request(request.url, { method: 'GET', headers: request.headers });
  standingInForHead.add(get);
  const res = await dispatch(get, env, ctx);
  const stated = res.headers.get('content-length');
  let length: number;
  if (stated !== null) {
    length = Number(stated);
    await res.body?.cancel();
  } else {
    length = res.body === null ? 0 : (await res.arrayBuffer()).byteLength;
  }
  const headers = new Headers(res.headers);
  headers.set('content-length', String(length));
  return new Response(null, { status: res.status, statusText: res.statusText, headers });
}
