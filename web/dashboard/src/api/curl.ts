// The equivalent curl call of a dashboard action, so the dashboard teaches
// the API. It uses an API key ($KEY) rather than the session cookie.

// quote makes s one shell word.
export function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export type CurlOptions = {
  // public calls (sign-in, accepting an invitation) carry no key
  public?: boolean;
};

// cli is a platform command line: plain words stay as they are, others
// are quoted.
export function cli(...words: (string | number)[]): string {
  return ["platform", ...words.map((w) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(String(w)) ? String(w) : quote(String(w))))].join(" ");
}

export function curl(method: string, path: string, body?: unknown, opts: CurlOptions = {}): string {
  const parts = ["curl"];
  // curl sends POST when given -d, GET otherwise.
  if (!(method === "GET" && body === undefined) && !(method === "POST" && body !== undefined)) parts.push("-X", method);
  if (!opts.public) parts.push("-H", '"Authorization: Bearer $KEY"');
  if (body !== undefined) parts.push("-H", quote("Content-Type: application/json"), "-d", quote(JSON.stringify(body)));
  parts.push(quote(location.origin + path));
  return parts.join(" ");
}
