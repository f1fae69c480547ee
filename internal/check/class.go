package check

import "github.com/operator-publish/publish/internal/errclass"

// ErrorClass implements errclass.Classified: a usage error (exit 2).
func (e *FlagError) ErrorClass() errclass.Class { return errclass.Usage }
