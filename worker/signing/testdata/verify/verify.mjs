// Runs the official Standard Webhooks JavaScript verifier over cases produced
// by worker/signing, so TestOfficialVerifier proves that real receivers accept
// hookline's signatures rather than only our own Verify.
//
// stdin:  [{"secret": "whsec_...", "headers": {"webhook-id": ...}, "body": "..."}]
// stdout: [{"accepted": true|false, "error": "..."}], one entry per case, in order.
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const cases = JSON.parse(readFileSync(0, "utf8"));
const results = cases.map(({ secret, headers, body }) => {
  try {
    new Webhook(secret).verify(body, headers);
    return { accepted: true, error: "" };
  } catch (err) {
    return { accepted: false, error: String(err?.message ?? err) };
  }
});
process.stdout.write(JSON.stringify(results) + "\n");
