package demo

// LogBuffer is the log destination the package's own tests use, shared with
// the end-to-end tests in demo_test.
type LogBuffer = syncBuffer
