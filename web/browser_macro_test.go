package web

import (
	"fmt"
	"strings"
	"testing"
)

// TestBrowserMacroWarnings: typing a CAKE-style template into a braces
// postback form shows the warning right under the URL field, through
// htmx; switching the macro style to hash clears it and fills the macro.
func TestBrowserMacroWarnings(t *testing.T) {
	t.Parallel()
	chromiumPath(t) // before any setup: fail or skip at once
	env := newEnv(t)
	base := env.server()
	env.createDashUser("admin@example.com", "admin")
	pid := env.createPartner("Clickwave")
	tab := newChromeTab(t, base)
	tab.login("admin@example.com")
	tab.open(fmt.Sprintf("/partners/%d/endpoints/new?kind=postback", pid))
	tab.waitUntil("the postback form", sel("#endpoint-url")+" && "+sel("#endpoint-macro-style"), stepTimeout)

	tab.typeInto("#endpoint-url", "https://t.clickwave.invalid/pb?cid=#click_id#")
	warning := `[data-testid=url-warning][data-code=foreign_token]`
	tab.waitUntil("the foreign-token warning", sel(warning), stepTimeout)
	if got := tab.text(warning); !strings.Contains(got, "#click_id#") || !strings.Contains(got, "hash") {
		tab.fatalf("warning text %q", got)
	}
	// Beside the field: the preview holding the warning comes right after
	// the URL field's block.
	beside := `(() => {
		const preview = document.getElementById("postback-preview");
		let el = document.getElementById("endpoint-url");
		while (el && el.parentElement !== preview.parentElement) el = el.parentElement;
		return !!el && el.nextElementSibling === preview && preview.contains(document.querySelector("[data-testid=url-warnings]"));
	})()`
	if !evalJS[bool](tab, beside) {
		tab.fatalf("the warning is not shown beside the URL field")
	}
	tab.screenshot("macro-warning")

	choose(tab, "#endpoint-macro-style", "hash")
	tab.waitUntil("the warning cleared by the hash style", "!"+sel(warning)+" && "+sel("[data-testid=preview-url]")+`?.textContent.includes("cid=abc%20123")`, stepTimeout)
}
