package components

// TileData is the view model of Tile: one big number on the overview.
type TileData struct {
	ID    string // the element id, for htmx swaps; may be empty
	Label string // "Pending"
	Value string // already formatted: "12,408"
	Hint  string // one line of context: "oldest 3 min"
	Tone  string // a Tone; colours the value and the edge; info when empty
	Href  string // when set, the whole tile links there
}

// AlertData is the view model of Alert: a banner that asks for attention.
type AlertData struct {
	Tone    string // warn | critical | info | ok
	Title   string
	Message string
	Links   []Link // what to do next
}

// alertRole is the ARIA role of an alert banner. Only critical banners
// interrupt a screen reader; the others are announced politely.
func alertRole(tone string) string {
	if tone == ToneCritical {
		return "alert"
	}
	return "status"
}
