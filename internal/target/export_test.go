package target

// Register adds k to the registered targets until the returned function
// removes it: a test's target, registered as a new target's file would
// be (kinds). Not for parallel tests.
func Register(k Kind) (remove func()) {
	kinds[k.Name] = k
	return func() { delete(kinds, k.Name) }
}
