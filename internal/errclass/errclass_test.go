package errclass

import (
	"errors"
	"fmt"
	"testing"
)

type classed struct{ c Class }

func (e classed) Error() string     { return fmt.Sprint("class ", e.c) }
func (e classed) ErrorClass() Class { return e.c }

// TestClassOf: the class comes from anywhere in the chain, joined errors
// included, by precedence usage > infrastructure > input.
func TestClassOf(t *testing.T) {
	input, usage, infra := classed{Input}, classed{Usage}, classed{Infrastructure}
	for _, c := range []struct {
		err  error
		want Class
		exit int
	}{
		{nil, None, 2},
		{errors.New("plain"), None, 2},
		{fmt.Errorf("wrapped: %w", input), Input, 1},
		{fmt.Errorf("an input error around a registry's refusal: %w", fmt.Errorf("%w: %w", input, infra)), Infrastructure, 2},
		{errors.Join(input, usage), Usage, 2},
		{errors.Join(errors.New("x"), fmt.Errorf("y: %w", input)), Input, 1},
	} {
		if got := ClassOf(c.err); got != c.want || got.ExitCode() != c.exit {
			t.Errorf("%v: class %d (exit %d), want %d (exit %d)", c.err, got, got.ExitCode(), c.want, c.exit)
		}
	}
}
