// oidc-provider ships no type declarations; the tests use a small part of it (see oidc.ts).
declare module 'oidc-provider' {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const Provider: any;
  export default Provider;
}
