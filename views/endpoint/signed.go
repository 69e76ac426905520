package endpoint

import "strings"

// SignedPostback is what a receiver needs to verify a signed postback
// endpoint's URLs; Param is "" for any other endpoint.
type SignedPostback struct {
	Param string // the signature's query parameter, e.g. "sig"
}

// SignedPostbackID is the verification panel's id.
const SignedPostbackID = "endpoint-signed-postback"

// snippet returns a verification snippet with the endpoint's parameter.
func (s SignedPostback) snippet(code string) string {
	return strings.ReplaceAll(code, "&sig=", "&"+s.Param+"=")
}

// Verification snippets. Each takes the URL as requested (the scheme and
// host the receiver published, plus the request's path and query), cuts it
// at the last "&sig=", and compares the hex HMAC-SHA256 of the part before
// in constant time, then checks that ts is recent.
const (
	nodeVerifySnippet = `const crypto = require("crypto");

// fullUrl: "https://" + req.headers.host + req.originalUrl (Express)
function verifyPostback(fullUrl, secret, maxAgeSeconds = 300) {
  const i = fullUrl.lastIndexOf("&sig=");
  if (i < 0) return false;
  const signed = fullUrl.slice(0, i);
  const got = Buffer.from(fullUrl.slice(i + "&sig=".length));
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const want = Buffer.from(crypto.createHmac("sha256", key).update(signed).digest("hex"));
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return false;
  const ts = Number(new URL(signed).searchParams.get("ts"));
  return Math.abs(Date.now() / 1000 - ts) <= maxAgeSeconds;
}`

	pythonVerifySnippet = `import base64, hashlib, hmac, time
from urllib.parse import parse_qs, urlsplit

# full_url: request.url (Flask) or request.build_absolute_uri() (Django)
def verify_postback(full_url: str, secret: str, max_age_seconds: int = 300) -> bool:
    i = full_url.rfind("&sig=")
    if i < 0:
        return False
    signed, got = full_url[:i], full_url[i + len("&sig="):]
    key = base64.b64decode(secret.removeprefix("whsec_"))
    want = hmac.new(key, signed.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(got, want):
        return False
    ts = int(parse_qs(urlsplit(signed).query)["ts"][-1])
    return abs(time.time() - ts) <= max_age_seconds`

	phpVerifySnippet = `<?php
// $fullUrl = 'https://' . $_SERVER['HTTP_HOST'] . $_SERVER['REQUEST_URI'];
function verify_postback(string $fullUrl, string $secret, int $maxAgeSeconds = 300): bool {
    $i = strrpos($fullUrl, '&sig=');
    if ($i === false) return false;
    $signed = substr($fullUrl, 0, $i);
    $got = substr($fullUrl, $i + strlen('&sig='));
    $key = base64_decode(preg_replace('/^whsec_/', '', $secret));
    if (!hash_equals(hash_hmac('sha256', $signed, $key), $got)) return false;
    parse_str((string) parse_url($signed, PHP_URL_QUERY), $query);
    return abs(time() - (int) ($query['ts'] ?? 0)) <= $maxAgeSeconds;
}`
)
