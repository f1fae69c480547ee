// Package errclass is the one taxonomy of publish's errors: input, usage
// and infrastructure, which decides the exit code. It imports nothing of
// the project, so that every package can classify its errors.
package errclass

// Class is what kind of failure an error is, which decides the exit code
// (docs/design.md, "Exit codes"): the user fixes an input error
// (Input) in the package repo, the overlays or publish.yaml (exit 1);
// a usage error (Usage) in the command line (exit 2); an
// infrastructure error (Infrastructure) is a registry, a Git
// server or the machine that failed or refused (exit 2). An error of no
// class exits 2.
type Class int

// The classes, None first.
const (
	None Class = iota
	Input
	Usage
	Infrastructure
)

// Classified is implemented by the errors that know their Class; an
// error whose class depends on its cause (a registry answer that is
// sometimes the input's, sometimes the registry's) returns None
// when it cannot tell.
type Classified interface {
	ErrorClass() Class
}

// ClassOf returns the class of err from every classified error in its
// chain (Unwrap, and the errors it joins), by precedence: usage, then
// infrastructure (a registry that refused is the registry's fault even
// when a command wrapped it as an input error), then input; None
// when none says.
func ClassOf(err error) Class {
	best := None
	walk(err, func(e error) {
		if c, ok := e.(Classified); ok {
			if k := c.ErrorClass(); rank(k) > rank(best) {
				best = k
			}
		}
	})
	return best
}

// ExitCode is the exit code of the class: 1 for input, 2 for the others.
func (c Class) ExitCode() int {
	if c == Input {
		return 1
	}
	return 2
}

func rank(c Class) int {
	switch c {
	case Usage:
		return 3
	case Infrastructure:
		return 2
	case Input:
		return 1
	}
	return 0
}

// walk calls fn for err and every error it wraps or joins.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	}
}
