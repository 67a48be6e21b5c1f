/**
 * A HEAD request answered as the GET it stands for: same status and headers, no body, and the
 * Content-Length the GET's body has (RFC 9110 §9.3.2). Hono would drop the body but give no length.
 */
export async function headAnswer<E, X>(
  dispatch: (request: Request, env: E, ctx: X) => Response | Promise<Response>,
  request: Request,
  env: E,
  ctx: X,
): Promise<Response> {
  const res = await dispatch(new Request(request.url, { method: 'GET', headers: request.headers }), env, ctx);
  const length = res.body === null ? 0 : (await res.arrayBuffer()).byteLength;
  const headers = new Headers(res.headers);
  headers.set('content-length', String(length));
  return new Response(null, { status: res.status, statusText: res.statusText, headers });
}
