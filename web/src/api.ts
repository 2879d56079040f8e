// The REST catalog as the console reads it: the same routes and the same authentication as any
// Iceberg client. A bearer token (from the sign-in form) is kept in sessionStorage, so it lasts
// for this tab only; without authentication on the server no token is needed.

const TOKEN_KEY = 'skade.console.token';

export class AuthError extends Error {}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

// A request to the server; 401 becomes AuthError (the page then offers the sign-in form),
// any other failure an ApiError with the server's message.
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = { ...authHeaders(), ...((init.headers as Record<string, string>) ?? {}) };
  const res = await fetch(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
  if (res.status === 401) throw new AuthError('the server asks for a valid token');
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = await res.json();
      if (body?.error?.message) message = `${res.status}: ${body.error.message}`;
    } catch {
      // not JSON: the status says enough
    }
    throw new ApiError(res.status, message);
  }
  return res;
}

// Iceberg's ids (snapshot ids, sequence numbers) are 64-bit: an integer past 2^53 is parsed
// into a BigInt from its source text, so that no id is rounded (JSON.parse's source access; a
// browser without it rounds, as any JSON.parse does).
export function parseJson(text: string): any {
  return (JSON.parse as any)(text, (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value,
  );
}

// JSON text of a value that may hold BigInts (written as the integers they are).
export function toJson(value: unknown, indent?: number): string {
  const raw = (JSON as any).rawJSON as ((s: string) => unknown) | undefined;
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? (raw ? raw(v.toString()) : v.toString()) : v), indent);
}

export async function getJson<T = any>(path: string, init: RequestInit = {}): Promise<T> {
  return parseJson(await (await request(path, init)).text()) as T;
}

export async function postJson<T = any>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  return getJson<T>(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: toJson(body),
    signal,
  });
}

let catalogBase: Promise<string> | null = null;

// "/v1/" or "/v1/{prefix}/": the catalog's routes, as /v1/config tells clients.
export function base(): Promise<string> {
  if (!catalogBase) {
    catalogBase = getJson('/v1/config')
      .then((config) => {
        const prefix: string | undefined = config?.overrides?.prefix;
        return prefix ? `/v1/${encodeURIComponent(prefix)}/` : '/v1/';
      })
      .catch((e) => {
        catalogBase = null;
        throw e;
      });
  }
  return catalogBase;
}

// A namespace in a path: its levels joined by the unit separator (the REST spec's encoding).
export function nsPath(levels: string[]): string {
  return levels.map(encodeURIComponent).join('%1F');
}

export async function tablePath(levels: string[], name: string): Promise<string> {
  return `${await base()}namespaces/${nsPath(levels)}/tables/${encodeURIComponent(name)}`;
}

// OAuth2 client credentials (the REST catalog's token endpoint) to a bearer token.
export async function signIn(clientId: string, clientSecret: string): Promise<void> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
  const res = await fetch('/v1/oauth/tokens', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body,
    credentials: 'omit',
  });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok || !answer.access_token) {
    throw new AuthError(answer.error_description ?? `sign-in refused (${res.status})`);
  }
  setToken(answer.access_token);
}

export interface Ident {
  namespace: string[];
  name: string;
}

export function identText(i: Ident): string {
  return [...i.namespace, i.name].join('.');
}
