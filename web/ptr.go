package web

// Optional values: sqlc maps nullable columns to pointers.

// deref is *p, or T's zero value when p is nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// ptrTo is a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }

// samePtr reports whether a and b are both nil or point to equal values.
func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// emptyNil is nil for "", else a pointer to a copy of s.
func emptyNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
