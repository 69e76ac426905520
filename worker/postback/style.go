package postback

// Style is how a template writes its macros. Trackers and networks differ:
// Voluum, Binom, Keitaro, Everflow, Affise, RedTrack and most others write
// {click_id}; CAKE (and networks built on it, such as ClickDealer) write
// #s2#. An endpoint keeps the style of the URL its partner gave it, so a
// pasted template is sent as the partner wrote it.
type Style string

// Macro styles.
const (
	StyleBraces Style = "braces" // {click_id}
	StyleHash   Style = "hash"   // #click_id#
)

// Styles lists the supported styles, the default first.
func Styles() []Style { return []Style{StyleBraces, StyleHash} }

// Valid reports whether s is a supported style.
func (s Style) Valid() bool { return s == StyleBraces || s == StyleHash }

// Token is macro name written in style s: "{name}" or "#name#".
func (s Style) Token(name string) string {
	open, closer := s.delims()
	return string(open) + name + string(closer)
}

// delims are the style's opening and closing delimiters.
func (s Style) delims() (open, closer byte) {
	if s == StyleHash {
		return '#', '#'
	}
	return '{', '}'
}
