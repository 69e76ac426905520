package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestKeitaroPreviewStatus: the Keitaro preset's preview sends a status
// Keitaro accepts (its help says: lead, sale or rejected).
func TestKeitaroPreviewStatus(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	base := env.server()
	pid := env.createPartner("Clickwave")
	op := env.signIn(base, "ops@example.com", "operator")
	_, doc := op.get(fmt.Sprintf("/partners/%d/endpoints/new?kind=postback&preset=keitaro", pid))
	help := testid(doc, "preset-help").Text()
	if !strings.Contains(help, "lead, sale and rejected") {
		t.Fatalf("the Keitaro help no longer lists its statuses: %q", help)
	}
	preview := strings.TrimSpace(testid(doc, "preview-url").Text())
	u, err := url.Parse(preview)
	if err != nil {
		t.Fatalf("preview %q: %v", preview, err)
	}
	switch status := u.Query().Get("status"); status {
	case "lead", "sale", "rejected":
	default:
		t.Fatalf("the Keitaro preview sends status=%q, which Keitaro does not accept (preview %s)", status, preview)
	}
}
