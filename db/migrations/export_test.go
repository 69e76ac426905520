package migrations

// SealPlaintextHeaders is the sealing migration's work, for its test: the
// migration itself runs once per database, before later ones.
var SealPlaintextHeaders = sealPlaintextHeaders
